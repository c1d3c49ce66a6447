"""Rig lifecycle on real enclosures with the injectable clock: reuse, parking and waking, idle reaping at
twice the idle window, the hard TTL, pinning by an open terminal, and the events that say so."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import websockets

from hangar.core.clock import FakeClock
from hangar.rigs.lifecycle import opening
from hangar.rigs.model import LIMITS, Surface
from tests.integration.rigs_env import RigsEnv, rigs_server

pytestmark = pytest.mark.packs("terminal")

TERM = LIMITS[Surface.terminal]


async def read_until(term: websockets.ClientConnection, marker: bytes) -> bytes:
    seen = b""
    while marker not in seen:
        frame = await asyncio.wait_for(term.recv(), 30)
        seen += frame if isinstance(frame, bytes) else frame.encode()
    return seen


@asynccontextmanager
async def terminal(env: RigsEnv, rig: str) -> AsyncIterator[websockets.ClientConnection]:
    """The rig's terminal lane, open once its shell has answered (until then the lane may not count yet)."""
    lane = await env.call("rig.terminalUrl", rigId=rig)
    headers = {"Authorization": f"Bearer {env.srv.owner_token}"}
    async with websockets.connect(env.ws_origin + lane["path"], additional_headers=headers) as term:
        await term.send(b"echo up$((1+1))\n")
        await read_until(term, b"up2")
        yield term


async def test_open_exec_reuse_and_list(tmp_path: Path) -> None:
    async with rigs_server(tmp_path) as env:
        rig = await env.open()
        out = await env.exec(rig, "echo hello from $(id -un); printf err >&2; exit 3")
        assert out == {
            "exitCode": 3,
            "stdout": "hello from rig\n",
            "stderr": "err",
            "timedOut": False,
            "truncated": False,
        }
        # One terminal per conversation: opening again answers the same rig, even when opens race.
        assert await env.open() == rig
        fresh = await env.new_space("raced")
        raced = await asyncio.gather(*(env.open(fresh) for _ in range(3)))
        assert len(set(raced)) == 1
        await env.call("rig_close", rigId=raced[0])
        other = await env.open(await env.new_space())
        assert other != rig
        rows = {r["rigId"]: r for r in await env.call("rig_list")}
        assert set(rows) == {rig, other}
        row = rows[rig]
        assert (row["surface"], row["status"], row["display"], row["controller"]) == ("terminal", "ready", None, None)
        assert row["memoryMb"] == 512
        timed = await env.call("rig.exec", rigId=rig, command="sleep 5", timeoutMs=300)
        assert timed["timedOut"] is True


async def test_idle_rig_parks_then_wakes_on_the_next_action(tmp_path: Path) -> None:
    clock = FakeClock()
    async with rigs_server(tmp_path, clock=clock) as env:
        rig = await env.open()
        await env.exec(rig, "echo kept > ~/state.txt")
        clock.advance(TERM.idle_window_s - 1)
        await env.manager.sweep()
        assert (await env.status(rig))["status"] == "ready"
        clock.advance(2)
        await env.manager.sweep()
        assert (await env.status(rig))["status"] == "parked"
        out = await env.exec(rig, "cat ~/state.txt")
        assert out["stdout"] == "kept\n"
        assert (await env.status(rig))["status"] == "ready"
        log = [e.verb for e in await env.manager.store.actions(env.ws, rig)]
        assert log[:2] == ["open", "exec"] and "park" in log and log[-1] == "exec"


async def test_idle_reaping_at_twice_the_window_emits_closed_and_reaped(tmp_path: Path) -> None:
    clock = FakeClock()
    async with rigs_server(tmp_path, clock=clock) as env:
        rig = await env.open()
        await env.exec(rig, "true")
        clock.advance(TERM.idle_window_s)
        await env.manager.sweep()
        clock.advance(TERM.idle_window_s)
        await env.manager.sweep()
        row = await env.status(rig)
        assert (row["status"], row["closeReason"]) == ("closed", "idleTimeout")
        closed = await env.events("rigs.closed")
        assert closed == [
            {"rigId": rig, "spaceId": env.space, "surface": "terminal", "reason": "idleTimeout", "phase": "closed"}
        ]
        reaped = await env.events("rigs.reaped")
        owner = f"user:{env.srv.owner_id}"
        assert reaped == [
            {"rigId": rig, "spaceId": env.space, "reason": "idleTimeout", "cause": "idle", "agent": owner}
        ]
        # The rig is gone, its home with it; a new open gives a new rig.
        assert not (env.srv.data_dir / "rigs" / "homes" / rig).exists()
        err = await env.client.request("rig.exec", {"workspace_id": env.ws, "rigId": rig, "command": "true"})
        assert err["error"]["code"] == "not_found" and "idleTimeout" in err["error"]["message"]
        assert await env.open() != rig


async def test_an_open_terminal_pins_against_idling_but_not_against_the_ttl(tmp_path: Path) -> None:
    clock = FakeClock()
    async with rigs_server(tmp_path, clock=clock) as env:
        rig = await env.open()
        async with terminal(env, rig) as term:
            clock.advance(3 * TERM.idle_window_s)
            await env.manager.sweep()
            assert (await env.status(rig))["status"] == "ready"
            clock.advance(TERM.ttl_s)
            await env.manager.sweep()
            row = await env.status(rig)
            assert (row["status"], row["closeReason"]) == ("closed", "ttlExpired")
            # The terminal ends with the rig.
            with_close = None
            try:
                while True:
                    await term.recv()
            except websockets.ConnectionClosed as exc:
                with_close = exc
            assert with_close is not None
        reaped = await env.events("rigs.reaped")
        assert [(e["reason"], e["cause"]) for e in reaped] == [("ttlExpired", "ttl")]


async def test_closing_the_terminal_unpins(tmp_path: Path) -> None:
    clock = FakeClock()
    async with rigs_server(tmp_path, clock=clock) as env:
        rig = await env.open()
        async with terminal(env, rig) as term:
            await term.send(b"exit\n")
        live = env.manager.live(env.ws, rig)
        for _ in range(400):  # the server notices the closed socket on its own time
            if live.lanes == 0:
                break
            await asyncio.sleep(0.025)
        assert live.lanes == 0
        clock.advance(TERM.idle_window_s + 1)
        await env.manager.sweep()
        assert (await env.status(rig))["status"] == "parked"


async def test_rig_close_destroys_the_rig_and_its_disk(tmp_path: Path) -> None:
    async with rigs_server(tmp_path) as env:
        rig = await env.open()
        await env.exec(rig, "head -c 1000 /dev/zero > ~/blob")
        home = env.srv.data_dir / "rigs" / "homes" / rig
        assert (home / "blob").stat().st_size == 1000
        reply = await env.call("rig_close", rigId=rig)
        assert reply == {"rigId": rig, "phase": "closed", "closeReason": "requested"}
        assert not home.exists()
        assert await env.call("rig_list") == []
        assert (await env.status(rig))["closeReason"] == "requested"
        # Closing again is harmless and says the same.
        assert (await env.call("rig_close", rigId=rig))["closeReason"] == "requested"
        assert await env.events("rigs.reaped") == []
        assert [e["reason"] for e in await env.events("rigs.closed")] == ["requested"]


async def test_open_answers_provisioning_when_the_boot_takes_longer_and_exec_waits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(opening, "OPEN_WAIT_S", 0.0)  # as if the image pack were still being built
    async with rigs_server(tmp_path) as env:
        reply = await env.call("rig.open", space_id=env.space, surface="terminal")
        assert reply["phase"] == "provisioning" and reply["statusDetail"]
        row = await env.status(reply["rigId"])
        assert row["status"] in ("provisioning", "ready")
        # The next action waits for the boot instead of failing.
        assert (await env.exec(reply["rigId"], "echo booted"))["stdout"] == "booted\n"
        assert (await env.status(reply["rigId"]))["status"] == "ready"


async def test_a_watch_lane_streams_activity_and_pins_the_rig(tmp_path: Path) -> None:
    clock = FakeClock()
    async with rigs_server(tmp_path, clock=clock) as env:
        rig = await env.open()
        watch = await env.client.watch("rig.watch", workspace_id=env.ws, rigId=rig)
        assert watch.result == {
            "rigId": rig,
            "surface": "terminal",
            "phase": "ready",
            "statusDetail": "",
            "controller": None,
            "ports": [],
            "egress": [],
        }
        await env.exec(rig, "echo watched")
        assert await watch.next() == {"type": "exec", "by": f"user:{env.srv.owner_id}", "command": "echo watched"}
        result = await watch.next()
        assert (result["type"], result["exitCode"], result["stdout"]) == ("execResult", 0, "watched\n")
        clock.advance(3 * TERM.idle_window_s)
        await env.manager.sweep()
        assert (await env.status(rig))["status"] == "ready"  # pinned while watched
        await watch.close()
        live = env.manager.live(env.ws, rig)
        for _ in range(400):
            if live.lanes == 0:
                break
            await asyncio.sleep(0.025)
        # Closing a lane counts as activity: the idle window starts again from there.
        clock.advance(TERM.idle_window_s)
        await env.manager.sweep()
        assert (await env.status(rig))["status"] == "parked"


async def test_a_watch_ends_with_the_rig(tmp_path: Path) -> None:
    async with rigs_server(tmp_path) as env:
        rig = await env.open()
        watch = await env.client.watch("rig.watch", workspace_id=env.ws, rigId=rig)
        await env.call("rig.takeControl", rigId=rig)
        assert await watch.next() == {"type": "control", "controller": env.srv.owner_id}
        await env.call("rig_close", rigId=rig)
        events = [await watch.next()]
        while events[-1]["type"] != "phase":
            events.append(await watch.next())
        assert events[-1] == {"type": "phase", "phase": "closed", "detail": "", "reason": "requested"}
