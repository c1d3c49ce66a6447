"""The phone view's screenshot polls in a rig's action log, through a real server, the RPC client and the test
phone: a principal's successful screenshots within the window are one row with their count; the window's edge,
another action and reading the log end the run (``hangar.rigs.lifecycle.foldlog``). Time is the server's clock,
moved by the test."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from hangar.core.clock import FakeClock
from hangar.rigs.lifecycle.foldlog import FOLD_WINDOW_S
from tests.integration.mobile_env import PhoneEnv, phone_server
from tests.peers import adb_device
from tests.support.rpc import RpcClient
from tests.unit.agents.fake_openai import call, running_fake_openai, text
from tests.unit.agents.support import wait_run


async def shots(env: PhoneEnv, rig: str, n: int) -> None:
    for _ in range(n):
        assert (await env.act(rig, action="screenshot"))["image"]["mime"] == "image/png"


async def rows(env: PhoneEnv, rig: str) -> list[dict[str, Any]]:
    log = await env.call("rig.actionLog", rigId=rig)
    return [e for e in log if e["verb"] in ("tap", "screenshot", "ui_dump")]


async def test_screenshot_polls_fold_into_one_row_per_window(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = FakeClock()
    async with phone_server(monkeypatch, clock=clock) as env:
        rig = await env.open_phone()
        await env.act(rig, action="tap", coordinate=[1, 2])
        started = clock.now()
        await shots(env, rig, 3)
        clock.advance(FOLD_WINDOW_S)  # at the window's edge: still the same row
        await shots(env, rig, 1)
        last = clock.now()
        clock.advance(1)  # one second past it: a new row
        await shots(env, rig, 1)
        await env.act(rig, action="tap", coordinate=[3, 4])  # a mutating verb ends the run
        await shots(env, rig, 2)
        await env.act(rig, action="ui_dump")  # another observation is a row of its own and ends the run too
        await shots(env, rig, 1)

        log = await rows(env, rig)  # reading the log writes the run it held
        assert [(e["verb"], e["details"].get("count")) for e in log] == [
            ("tap", None),
            ("screenshot", 4),
            ("screenshot", 1),
            ("tap", None),
            ("screenshot", 2),
            ("ui_dump", None),
            ("screenshot", 1),
        ], log
        first = log[1]
        assert datetime.fromisoformat(first["details"]["firstAt"]) == started
        assert datetime.fromisoformat(first["details"]["lastAt"]) == last
        assert first["details"]["width"] > 0 and first["outcome"] == "ok"
        seqs = [e["seq"] for e in await env.call("rig.actionLog", rigId=rig)]
        assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)

        # After the log was read, the next polls start a new row.
        await shots(env, rig, 2)
        assert [e["details"].get("count") for e in await rows(env, rig)][-1] == 2


async def test_each_principal_has_its_own_run_and_failed_screenshots_are_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    async with phone_server(monkeypatch, clock=FakeClock()) as env:
        rig = await env.open_phone()
        member = await env.srv.new_user_token(env.ws, "admin", name="watcher")
        async with RpcClient(env.srv.ws_url, member) as watcher:
            for _ in range(3):  # two people polling the same phone at once
                await shots(env, rig, 1)
                reply = await watcher.call(
                    "mobile_use", workspace_id=env.ws, rigId=rig, action={"action": "screenshot"}
                )
                assert reply["image"]["mime"] == "image/png"
        log = await rows(env, rig)
        assert (
            sorted((e["principal"], e["details"]["count"]) for e in log)
            == sorted([(log[0]["principal"], 3), (log[1]["principal"], 3)])
            and log[0]["principal"] != log[1]["principal"]
        ), log

        # A screenshot the phone failed is a row of its own, with its error, never counted into a run.
        await shots(env, rig, 1)
        monkeypatch.setattr(adb_device, "png", lambda *_: b"not a png")
        for _ in range(2):
            e = await env.fails("mobile_use", rigId=rig, action={"action": "screenshot"})
            assert e.code == "unavailable", e.message
        log = (await rows(env, rig))[2:]
        assert [(e["outcome"], e["details"].get("count"), e["details"].get("error")) for e in log] == [
            ("ok", 1, None),
            ("error", None, "unavailable"),
            ("error", None, "unavailable"),
        ], log


async def test_the_sweep_writes_a_run_once_its_window_is_over(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = FakeClock()
    async with phone_server(monkeypatch, clock=clock) as env:
        rig = await env.open_phone()
        await shots(env, rig, 2)

        async def stored() -> list[tuple[str, Any]]:  # the table itself: reading through the op would write the run
            return [(a.verb, a.details.get("count")) for a in await env.manager.store.actions(env.ws, rig)]

        clock.advance(FOLD_WINDOW_S)
        await env.manager.sweep()
        assert ("screenshot", 2) not in await stored()  # at the window's edge the run still counts
        clock.advance(1)
        await env.manager.sweep()
        assert (await stored()).count(("screenshot", 2)) == 1


@pytest.mark.parametrize(("window", "counts"), [(5.0, [2, 1]), (0.0, [1, 1, 1])])
async def test_the_window_is_a_server_setting(
    monkeypatch: pytest.MonkeyPatch, window: float, counts: list[int]
) -> None:
    clock = FakeClock()
    async with phone_server(monkeypatch, clock=clock, rig_screenshot_fold_seconds=window) as env:
        rig = await env.open_phone()
        await shots(env, rig, 1)
        clock.advance(window)  # at the window's edge (0: never folded)
        await shots(env, rig, 1)
        clock.advance(1)
        await shots(env, rig, 1)
        assert [e["details"]["count"] for e in await rows(env, rig)] == counts


async def test_closing_the_rig_writes_its_run_before_the_close_row(monkeypatch: pytest.MonkeyPatch) -> None:
    async with phone_server(monkeypatch, clock=FakeClock()) as env:
        rig = await env.open_phone()
        await shots(env, rig, 3)
        await env.call("rig_close", rigId=rig)
        stored = [(a.verb, a.details.get("count")) for a in await env.manager.store.actions(env.ws, rig)]
        assert stored[-2:] == [("screenshot", 3), ("close", None)], stored


async def test_an_agents_screenshots_fold_the_same_way(monkeypatch: pytest.MonkeyPatch) -> None:
    # The widest window, so the real clock of the agent's run never ends the run between its calls.
    async with running_fake_openai() as fake, phone_server(monkeypatch, rig_screenshot_fold_seconds=3600) as env:
        agent = await env.call(
            "agents.create", name="Phoner", adapter={"type": "openai", "baseUrl": fake.url, "model": "phone"}
        )
        rig = await env.open_phone()
        shot = call("mobile_use", {"rigId": rig, "action": {"action": "screenshot"}})
        tap = call("mobile_use", {"rigId": rig, "action": {"action": "tap", "coordinate": [7, 8]}})
        fake.script("phone", shot, shot, shot, tap, shot, text("done"))
        started = await env.call("agents.run", agent_id=agent["id"], space_id=env.space, prompt="look")
        run = await wait_run(env.client, env.ws, started["runId"], timeout=120)
        assert run["outcome"] == "ok", run
        assert ("tap", "7", "8") in env.phone.events

        who = f"agent:{agent['id']}"
        log = await rows(env, rig)
        assert [(e["principal"], e["verb"], e["details"].get("count")) for e in log] == [
            (who, "screenshot", 3),
            (who, "tap", None),
            (who, "screenshot", 1),
        ], log
