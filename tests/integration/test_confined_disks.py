"""Disk quotas on what confined user code writes, driven over the real socket of the real server by a member.

A pipeline run's working directory and a space's folder are each a filesystem of their own
(``hangar.core.disks``): a step writing past the run's quota fails naming it, and the file on the host stays
within the quota; a write under the quota succeeds. A command agent filling its space's folder is stopped the
same way. A finished run's directory is removed once its retention period has passed (on the injectable clock),
not before, and the symlinks its scripts planted there never lead the removal to a host file.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from hangar.core.clock import FakeClock
from hangar.core.confine import SETTING_TRUSTED_HOST_EXEC
from hangar.core.disks import RIG_DISK_SETTING, RUN_DISK_SETTING, SPACE_DISK_SETTING
from hangar.identity import IdentityService
from hangar.pipelines.retention import RETENTION_SETTING
from hangar.pipelines.runtime import PipelinesRuntime
from tests.integration.rigs_enclosure_env import ready_pack
from tests.integration.test_confined_user_code import finished, member_session, step, template
from tests.support.confined import trust_host
from tests.support.rpc import RpcClient
from tests.support.runs import assert_completed
from tests.support.server import running_server
from tests.unit.agents.support import wait_run

# Confined code runs in enclosures booted from the terminal image pack.
pytestmark = pytest.mark.packs("terminal")

QUOTA_MB = 256
MB = 1024 * 1024


def writing(tid: str, megabytes: int) -> dict[str, Any]:
    return planting(tid, f"dd if=/dev/zero of=big bs=1M count={megabytes} status=none && echo wrote")


def planting(tid: str, script: str) -> dict[str, Any]:
    return template(tid, ("write", script, {}))


async def run(c: RpcClient, ws: str, raw: dict[str, Any]) -> dict[str, Any]:
    await c.call("pipelines.templates.create", workspace_id=ws, template=raw)
    started = await c.call("pipelines.runs.start", workspace_id=ws, templateId=raw["id"])
    return await finished(c, ws, started["runId"], 300)


def on_disk(path: Path) -> int:
    """Bytes a file takes on the host's disk."""
    return os.stat(path).st_blocks * 512


async def test_a_step_writing_past_the_run_quota_fails_and_the_host_file_stays_bounded(tmp_path: Path) -> None:
    async with member_session(tmp_path) as (srv, c, ws):
        await srv.ctx.service(IdentityService).set_setting(RUN_DISK_SETTING, QUOTA_MB)
        under = await run(c, ws, writing("under", QUOTA_MB * 3 // 4))
        assert under["status"] == "completed" and under["state"]["write"] == "wrote", under
        over = await run(c, ws, writing("over", QUOTA_MB * 2))
        assert over["status"] == "failed", over
        error = step(over, "write")["error"]
        assert "No space left on device" in error and RUN_DISK_SETTING in error, error
        big = srv.data_dir / "pipelines" / over["runId"] / "big"
        assert big.stat().st_size < QUOTA_MB * MB and on_disk(big) < QUOTA_MB * MB
        images = list((srv.data_dir / "disks").glob("*.img"))
        assert images and all(on_disk(i) <= (QUOTA_MB + 1) * MB for i in images), images


async def test_a_command_agent_filling_its_space_is_stopped_at_the_space_quota(tmp_path: Path) -> None:
    async with member_session(tmp_path, "admin") as (srv, c, ws):
        await srv.ctx.service(IdentityService).set_setting(SPACE_DISK_SETTING, QUOTA_MB)
        space = (await c.call("spaces.create", workspace_id=ws, title="filler"))["id"]
        fill = f"dd if=/dev/zero of=big bs=1M count={QUOTA_MB * 2} status=none 2>&1; echo status=$?"
        adapter = {"type": "command", "argv": ["bash", "-c", fill]}
        agent = (await c.call("agents.create", workspace_id=ws, name="Filler", adapter=adapter))["id"]
        started = await c.call("agents.run", workspace_id=ws, agent_id=agent, space_id=space, prompt="go")
        done = await wait_run(c, ws, started["runId"], timeout=300)
        assert done["outcome"] == "ok", done
        msgs = (await c.call("messages.list", workspace_id=ws, space_id=space))["messages"]
        reply = next(m["content"] for m in msgs if m["author"]["kind"] == "agent")
        assert "No space left on device" in reply and "status=1" in reply, reply
        big = srv.data_dir / ws / "spaces" / space / "big"
        assert big.stat().st_size < QUOTA_MB * MB and on_disk(big) < QUOTA_MB * MB


async def test_an_enclosures_own_files_and_a_rigs_home_are_bounded_too(tmp_path: Path) -> None:
    fill = "dd if=/dev/zero of={path} bs=1M count={mb} status=none 2>&1; echo status=$?; stat -c %s {path}"
    async with member_session(tmp_path) as (srv, c, ws):
        await srv.ctx.service(IdentityService).set_setting(RIG_DISK_SETTING, QUOTA_MB)
        # A shell step writing outside its run directory (the enclosure's /tmp): under the quota, then past it.
        done = await run(c, ws, planting("tmp", fill.format(path="/tmp/a", mb=QUOTA_MB // 2) + "; rm /tmp/a; "
                                               + fill.format(path="/tmp/b", mb=QUOTA_MB * 2)))  # fmt: skip
        assert_completed(done)
        _under, _, over = done["state"]["write"].partition("status=0")
        assert int(over.split()[0]) == QUOTA_MB // 2 * MB, done["state"]["write"]
        assert "No space left on device" in over and "status=1" in over, over
        assert int(over.split()[-1]) < QUOTA_MB * MB
        # A member's terminal rig filling its home.
        space = (await c.call("spaces.create", workspace_id=ws, title="term"))["id"]
        rig = (await c.call("rig.open", workspace_id=ws, space_id=space, surface="terminal"))["rigId"]
        out = await c.call(
            "rig.exec", workspace_id=ws, rigId=rig, command=fill.format(path="$HOME/big", mb=QUOTA_MB * 2),
            timeoutMs=120_000,
        )  # fmt: skip
        assert "No space left on device" in out["stdout"] and "status=1" in out["stdout"], out
        assert int(out["stdout"].split()[-1]) < QUOTA_MB * MB
        home = srv.data_dir / "rigs" / "homes" / rig
        assert os.path.ismount(home) and on_disk(home / "big") < QUOTA_MB * MB
        await c.call("rig_close", workspace_id=ws, rigId=rig)
        assert not home.exists()


async def test_retention_removes_a_finished_runs_directory_after_the_period_never_following_a_planted_link(
    tmp_path: Path,
) -> None:
    await ready_pack()
    clock = FakeClock()
    canary = tmp_path / "canary"
    canary.mkdir()
    (canary / "host-file").write_text("keep me")
    plant = (
        f"ln -s {canary}/host-file link-to-file && ln -s {canary} link-to-dir && mkdir -p sub && "
        f"ln -s {canary} sub/deeper && echo mine > own.txt"
    )
    async with running_server(tmp_path / "data", clock=clock) as srv:
        ws = await srv.new_workspace("kept")
        token = await srv.new_user_token(ws, "member", name="mallory")
        identity = srv.ctx.service(IdentityService)
        await identity.set_setting(RETENTION_SETTING, 2)
        retention = srv.ctx.service(PipelinesRuntime).retention
        async with RpcClient(srv.ws_url, token) as c:
            confined = await run(c, ws, planting("confined", plant))
            # The same links in a directory without a disk: a run of trusted host execution.
            await trust_host(srv.ctx)
            on_host = await run(c, ws, planting("on-host", plant))
            await identity.set_setting(SETTING_TRUSTED_HOST_EXEC, False)
        dirs = [srv.data_dir / "pipelines" / r["runId"] for r in (confined, on_host)]
        assert all(r["status"] == "completed" for r in (confined, on_host))
        assert os.path.ismount(dirs[0]) and not os.path.ismount(dirs[1])
        assert all((d / "own.txt").read_text() == "mine\n" and (d / "link-to-dir").is_symlink() for d in dirs)
        clock.advance(2 * 86400 - 60)  # a minute before the period ends: kept
        assert await retention.sweep(ws) == []
        assert all(d.is_dir() for d in dirs)
        clock.advance(120)  # a minute after: removed, the host files the links point at untouched
        assert sorted(await retention.sweep(ws)) == sorted(r["runId"] for r in (confined, on_host))
        assert not any(d.exists() for d in dirs)
        assert (canary / "host-file").read_text() == "keep me" and canary.is_dir()
        assert not list((srv.data_dir / "disks").glob("*.img"))
        assert not (srv.data_dir / "pipelines" / ".control" / confined["runId"]).exists()
        async with RpcClient(srv.ws_url, token) as c:  # the runs' records stay
            kept = await c.call("pipelines.runs.get", workspace_id=ws, runId=confined["runId"])
            assert kept["status"] == "completed"
