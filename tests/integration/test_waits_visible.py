"""Waits are visible: a command agent's run, a shell step and a rig that wait for the terminal image's first build
(and then their enclosure's boot) say so where people look, with the build's own step and progress, and the server
log has one line per step; a failed build fails what waited for it naming why, and running it again builds again.

Against the real server with an empty packs directory and a stand-in ``mmdebstrap`` (tests/support/fake_mmdebstrap.py)
that stops at "downloading packages" until the test lets it finish; its pack is hard links to the tests' real
terminal pack, so what waited then runs in a real enclosure."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from hangar.rigs.images.builder import TERMINAL as TERMINAL_RECIPE
from tests.integration.test_rigs_packs import TERMINAL, parts_with_packs_in
from tests.support.confined import CLI_AGENT
from tests.support.fake_mmdebstrap import FakeMmdebstrap, install_fake_mmdebstrap
from tests.support.packs import PACKS, rigs_unavailable
from tests.support.rpc import RpcClient
from tests.support.runs import assert_completed
from tests.support.server import RunningServer, running_server
from tests.unit.agents.support import wait_run

pytestmark = pytest.mark.packs("terminal")

STEP = "terminal image: downloading packages (4/10)"
BUILD_STEPS = [
    "terminal image: preparing (1/10)",
    "terminal image: fetching package lists (3/10)",
    STEP,
    "terminal image: done (10/10)",
    "terminal image ready",
]
BOOT_STEPS = ["preparing the rig's disk", "starting the rig and its egress gate", "rig ready"]
WAITS_LOG = "hangar.rigs.confinement.waits"
PACKS_LOG = "hangar.rigs.images.packs"


@dataclass
class World:
    srv: RunningServer
    client: RpcClient
    ws: str
    space: str
    fake: FakeMmdebstrap
    packs: Path


@asynccontextmanager
async def first_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **settings: Any) -> AsyncIterator[World]:
    """A server whose packs directory is empty, the stand-in builder on PATH, a workspace and a space."""
    if (reason := rigs_unavailable()) is not None:
        pytest.skip(f"enclosures cannot run here: {reason}")
    fake = install_fake_mmdebstrap(tmp_path, monkeypatch, template=PACKS / TERMINAL_RECIPE.name)
    packs = tmp_path / "packs"
    async with (
        running_server(tmp_path / "data", parts=parts_with_packs_in(packs), **settings) as srv,
        RpcClient(srv.ws_url, srv.owner_token) as client,
    ):
        ws = await srv.new_workspace("waits")
        space = (await client.call("spaces.create", workspace_id=ws, title="first hour"))["id"]
        yield World(srv, client, ws, space, fake, packs)


async def until(check: Callable[[], Awaitable[Any]]) -> Any:
    async with asyncio.timeout(120):  # a bound against hangs only
        while not (got := await check()):
            await asyncio.sleep(0.05)
        return got


async def agent_run(w: World, prompt: str = "echo hi") -> str:
    adapter = {"type": "command", "argv": [*CLI_AGENT]}
    agents = (await w.client.call("agents.list", workspace_id=w.ws))["agents"]
    agent = agents[0]["id"] if agents else (await w.client.call(
        "agents.create", workspace_id=w.ws, name="Cli", adapter=adapter
    ))["id"]  # fmt: skip
    started = await w.client.call("agents.run", workspace_id=w.ws, agent_id=agent, space_id=w.space, prompt=prompt)
    return str(started["runId"])


async def waits_of(w: World, run_id: str) -> list[dict[str, Any]]:
    events = (await w.client.call("runs.events", workspace_id=w.ws, runId=run_id))["events"]
    return [e["payload"] for e in events if e["type"] == "agents.turnWaiting"]


def lines(caplog: pytest.LogCaptureFixture, logger: str, about: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == logger and about in r.getMessage()]


async def test_a_command_agents_first_run_shows_the_image_build_step_by_step_then_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="hangar")
    async with first_start(tmp_path, monkeypatch) as w:
        run_id = await agent_run(w)
        # The run says what it waits for, with the build's own step and count, while it builds.
        waiting = await until(lambda: _last_wait_is(w, run_id, STEP))
        assert waiting | {"runId": run_id} == {
            "runId": run_id, "agentId": waiting["agentId"], "spaceId": w.space,
            "turn": 1, "text": STEP, "step": 4, "steps": 10, "waiting": True,
        }  # fmt: skip
        run = await w.client.call("runs.get", workspace_id=w.ws, runId=run_id)
        assert run["status"] == "running"
        # The settings screen's list shows the same build under way.
        pack = next(p for p in await w.client.call("rigs.packs") if p["name"] == TERMINAL)
        assert (pack["state"], pack["step"], pack["stepIndex"], pack["steps"]) == ("building", STEP, 4, 10)

        w.fake.finish()
        done = await wait_run(w.client, w.ws, run_id, timeout=120)
        assert done["outcome"] == "ok", done
        replies = [
            m["content"]
            for m in (await w.client.call("messages.list", workspace_id=w.ws, space_id=w.space))["messages"]
            if m["author"]["kind"] == "agent"
        ]
        assert replies and replies[0].startswith("cwd=/home/rig/worktree")

        said = await waits_of(w, run_id)
        texts = [e["text"] for e in said]
        assert texts[0] == "starting the enclosure"
        # Every step of the build, in order, then the boot's, then the end of the wait.
        assert [t for t in texts if t.startswith("terminal image")] == BUILD_STEPS
        assert texts[-4:] == [*BOOT_STEPS, "the enclosure is up"]
        assert [e["waiting"] for e in said] == [True] * (len(said) - 1) + [False]
        assert len(texts) == len(set(texts))  # each step once

    # The log: one line per step for the run, one per step for the build, no more.
    scope = f"agentRun:{run_id}"
    assert lines(caplog, WAITS_LOG, scope) == [
        *(f"{scope} waits: {t}" for t in texts[:-1]),
        f"{scope} waits no more: the enclosure is up",
    ]
    pack_lines = lines(caplog, PACKS_LOG, f"rigs: pack {TERMINAL}: ")
    assert [line.split(": ", 2)[2] for line in pack_lines if "terminal image:" in line or "ready" in line] == (
        BUILD_STEPS
    )
    assert len(pack_lines) == len(set(pack_lines))


async def _last_wait_is(w: World, run_id: str, text: str) -> dict[str, Any] | None:
    said = await waits_of(w, run_id)
    return said[-1] if said and said[-1]["text"] == text else None


async def test_a_failed_build_fails_the_run_naming_why_and_running_again_builds_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="hangar")
    async with first_start(tmp_path, monkeypatch) as w:
        w.fake.finish(exit_code=2)  # the mirror answers 404
        first = await wait_run(w.client, w.ws, await agent_run(w), timeout=120)
        assert first["outcome"] == "failed"
        error = first["error"]
        assert error.startswith("the command could not run: the terminal image could not be built: mmdebstrap failed")
        assert "exit code 2" in error and "E: the mirror answered 404" in error
        assert error.endswith("(it is built again when next needed)")
        assert str(w.packs) not in error
        failed_lines = lines(caplog, PACKS_LOG, f"rigs: pack {TERMINAL} could not be built: ")
        assert len(failed_lines) == 1 and "the mirror answered 404" in failed_lines[0]

        # Running it again builds again, step by step (the stand-in waits, then succeeds), and the run goes through.
        w.fake.hold()
        again_id = await agent_run(w)
        await until(lambda: _last_wait_is(w, again_id, STEP))
        w.fake.finish()
        again = await wait_run(w.client, w.ws, again_id, timeout=120)
        assert again["outcome"] == "ok", again
        texts = [e["text"] for e in await waits_of(w, again_id)]
        assert [t for t in texts if t.startswith("terminal image")] == BUILD_STEPS
        assert (w.packs / TERMINAL / ".hangar-pack.json").is_file()


async def test_a_shell_step_says_what_it_waits_for_in_its_progress(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="hangar")
    async with first_start(tmp_path, monkeypatch) as w:
        template = {
            "id": "hello",
            "steps": [
                {"id": "start", "kind": "trigger"},
                {
                    "id": "say", "kind": "listen", "body": "shell.run", "trigger": {"sourceStepIds": ["start"]},
                    "config": {"script": "echo hello from $(id -un)", "outputKey": "said"},
                },
            ],
        }  # fmt: skip
        await w.client.call("pipelines.templates.create", workspace_id=w.ws, template=template)
        run_id = (await w.client.call("pipelines.runs.start", workspace_id=w.ws, templateId="hello"))["runId"]

        async def say() -> dict[str, Any]:
            run = await w.client.call("pipelines.runs.get", workspace_id=w.ws, runId=run_id)
            return dict(next(s for s in run["steps"] if s["stepId"] == "say"))

        waiting = await until(lambda: _progress_is(say, STEP))
        assert waiting["status"] == "running"
        assert waiting["progress"] == {"waiting": STEP, "step": 4, "steps": 10}
        w.fake.finish()
        run = await until(lambda: _settled(w, run_id))
        assert_completed(run)
        assert run["state"]["said"] == "hello from rig"
        assert (await say())["progress"] == {}  # the wait is over: nothing left to say
    scope = f"pipelineRun:{run_id}"
    assert f"{scope} waits: {STEP}" in lines(caplog, WAITS_LOG, scope)


async def _progress_is(step: Callable[[], Awaitable[dict[str, Any]]], text: str) -> dict[str, Any] | None:
    got = await step()
    return got if (got.get("progress") or {}).get("waiting") == text else None


async def _settled(w: World, run_id: str) -> dict[str, Any] | None:
    run = dict(await w.client.call("pipelines.runs.get", workspace_id=w.ws, runId=run_id))
    return run if run["status"] in ("completed", "failed", "cancelled") else None


async def test_a_rigs_boot_shows_its_progress_on_its_watch_and_the_packs_watch_follows_the_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="hangar")
    async with first_start(tmp_path, monkeypatch) as w:
        packs = await w.client.watch("rigs.watchPacks")
        assert next(p for p in packs.result["packs"] if p["name"] == TERMINAL)["state"] == "missing"

        opening = asyncio.create_task(
            w.client.call("rig.open", workspace_id=w.ws, space_id=w.space, surface="terminal")
        )
        rows = await until(lambda: w.client.call("rig_list", workspace_id=w.ws))
        rig_id = rows[0]["rigId"]
        watch = await w.client.watch("rig.watch", workspace_id=w.ws, rigId=rig_id)
        assert watch.result["phase"] == "provisioning"
        # The watch opened while the boot went on: its state says the step it had reached, events the next ones.
        progress: list[dict[str, Any]] = [{"type": "progress", "detail": watch.result["statusDetail"]}]
        while not progress or progress[-1]["detail"] != STEP:
            event = await watch.next(120)
            if event["type"] == "progress":
                progress.append(event)
        if len(progress) > 1:
            assert progress[-1] == {"type": "progress", "detail": STEP, "step": 4, "steps": 10}

        # The packs watch said the build started and where it got, without being asked again.
        seen: list[dict[str, Any]] = []
        while not seen or seen[-1]["step"] != STEP:
            seen.append(next(p for p in (await packs.next(60))["packs"] if p["name"] == TERMINAL))
        assert seen[-1]["state"] == "building" and (seen[-1]["stepIndex"], seen[-1]["steps"]) == (4, 10)

        w.fake.finish()
        opened = await opening
        assert opened["phase"] == "ready"
        while True:  # the boot's own steps follow the build's on the same watch
            event = await watch.next(120)
            if event["type"] == "progress":
                progress.append(event)
            if event["type"] == "phase" and event["phase"] == "ready":
                break
        details = [e["detail"] for e in progress]
        assert details[-len(BOOT_STEPS) :] == BOOT_STEPS
        built = [d for d in details if d.startswith("terminal image")]
        assert built == BUILD_STEPS[BUILD_STEPS.index(built[0]) :] and STEP in built
        while (ready := next(p for p in (await packs.next(60))["packs"] if p["name"] == TERMINAL))["state"] != "ready":
            pass
        assert ready["step"] is None
    # One line per step in the log (the watch opened after the first ones: what it saw is the log's end).
    logged = [
        line.split("starts: ", 1)[1] for line in lines(caplog, "hangar.rigs.lifecycle.opening", f"rigs: rig {rig_id} ")
    ]
    assert logged[logged.index(details[0]) :] == details and len(logged) == len(set(logged))
