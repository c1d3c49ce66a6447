"""``workspaces.delete`` and what else is under way: the answer a former member gets, a request that passed its
access check just before the deletion committed, and a deletion resumed at start while another process drives
the workspace's runs."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from hangar.rpc.dispatcher import Dispatcher
from hangar.server.deletion.steps import HOLD_VARIABLE
from tests.support.confined import host_pids
from tests.support.processes import cli, hangar_serve
from tests.support.rpc import RpcClient, RpcError
from tests.support.server import running_server


async def test_an_op_on_a_deleted_workspace_says_it_was_deleted(tmp_path: Path) -> None:
    """A former member (and the server owner) is told the workspace was deleted, by this server and by another
    on the same data directory; someone who is no member of a workspace that exists is told just that."""
    data = tmp_path / "data"
    async with running_server(data) as srv, RpcClient(srv.ws_url, srv.owner_token) as owner:
        ws = await srv.new_workspace("doomed")
        kept = await srv.new_workspace("kept")
        member = await srv.new_user_token(ws, "member", name="member")
        await owner.call("workspaces.delete", workspace_id=ws, confirm="doomed")
        async with RpcClient(srv.ws_url, member) as former:
            with pytest.raises(RpcError) as gone:
                await former.call("spaces.list", workspace_id=ws)
            assert gone.value.code == "forbidden"
            assert gone.value.message == f"workspace {ws} was deleted"
            with pytest.raises(RpcError) as stranger:
                await former.call("spaces.list", workspace_id=kept)
            assert stranger.value.message == f"you are not a member of workspace {kept}"
        with pytest.raises(RpcError) as owners:
            await owner.call("spaces.create", workspace_id=ws, title="late")
        assert owners.value.message == f"workspace {ws} was deleted"
        with hangar_serve(data, "--no-prepare-pack") as other:
            async with RpcClient(other.ws_url, member) as there:
                with pytest.raises(RpcError) as elsewhere:
                    await there.call("spaces.list", workspace_id=ws)
        assert elsewhere.value.message == f"workspace {ws} was deleted"


Held = Callable[..., Awaitable[None]]


def _hold_after_access_check(monkeypatch: pytest.MonkeyPatch, op: str) -> tuple[asyncio.Event, asyncio.Event]:
    """Calls of ``op`` stop right after their access checks passed until the test releases them: the moment a
    deletion can commit in between, made deterministic."""
    checked, release = asyncio.Event(), asyncio.Event()
    original: Held = Dispatcher.guard

    async def guard(self: Dispatcher, principal: Any, spec: Any, *args: Any, **kwargs: Any) -> None:
        await original(self, principal, spec, *args, **kwargs)
        if spec.name == op:
            checked.set()
            await release.wait()

    monkeypatch.setattr(Dispatcher, "guard", guard)
    return checked, release


async def test_a_request_checked_before_the_deletion_leaves_no_folder_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``spaces.create`` makes its folder before it writes its row: held between its access check and that,
    while the workspace is deleted, it makes nothing under the deleted workspace's directory."""
    checked, release = _hold_after_access_check(monkeypatch, "spaces.create")
    async with running_server(tmp_path / "data") as srv, RpcClient(srv.ws_url, srv.owner_token) as owner:
        ws = await srv.new_workspace("doomed")
        async with RpcClient(srv.ws_url, srv.owner_token) as late:
            pending = asyncio.create_task(late.call("spaces.create", workspace_id=ws, title="late"))
            await asyncio.wait_for(checked.wait(), 60)
            await owner.call("workspaces.delete", workspace_id=ws, confirm="doomed")
            assert not (srv.data_dir / ws).exists()
            release.set()
            with pytest.raises(RpcError) as refused:
                await pending
        assert not (srv.data_dir / ws).exists()  # no empty folder recreated under the deleted workspace
        assert refused.value.code == "not_found" and "was deleted" in refused.value.message


SLOW = {
    "id": "slow",
    "steps": [
        {"id": "start", "kind": "trigger"},
        {
            "id": "slow",
            "kind": "listen",
            "body": "shell.run",
            "trigger": {"sourceStepIds": ["start"]},
            "config": {"script": "sleep 300 & echo $! > pid; wait"},
        },
    ],
}


async def _until(check: Callable[[], Awaitable[bool]], what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if await check():
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"never: {what}")


@pytest.mark.packs("terminal")
async def test_a_deletion_resumed_at_start_cancels_the_runs_another_process_drives(tmp_path: Path) -> None:
    """A deletion killed after its first step, finished when its server starts again: the run of the workspace
    that a second server drives (a script still running) is cancelled, its processes gone."""
    data = tmp_path / "data"
    cli(data, "admin", "owner-token")  # makes the data directory and the owner
    token = cli(data, "admin", "owner-token").stdout.strip()
    with hangar_serve(data, "--no-prepare-pack") as driver:
        async with RpcClient(driver.ws_url, token) as here:
            ws = (await here.call("workspaces.create", name="busy"))["id"]
            await here.call("pipelines.templates.create", workspace_id=ws, template=SLOW)
            run_id = (await here.call("pipelines.runs.start", workspace_id=ws, templateId="slow"))["runId"]
            pid_file = data / "pipelines" / run_id / "pid"

            async def started() -> bool:
                return pid_file.exists() and bool(pid_file.read_text().strip())

            await _until(started, "the script started")
            pid = int(pid_file.read_text())
            assert host_pids(pid, "sleep")
            with hangar_serve(data, "--no-prepare-pack", env={HOLD_VARIABLE: "recorded"}) as deleter:
                async with RpcClient(deleter.ws_url, token) as there:
                    pending = asyncio.create_task(there.call("workspaces.delete", workspace_id=ws, confirm="busy"))

                    async def recorded() -> bool:
                        return any(d["workspace_id"] == ws for d in await here.call("workspaces.deletions"))

                    await _until(recorded, "the deletion was recorded")
                    deleter.kill9()
                    pending.cancel()
                    await asyncio.gather(pending, return_exceptions=True)
            assert host_pids(pid, "sleep")  # the deletion stopped before it stopped anything
            with hangar_serve(data, "--no-prepare-pack"):  # its start finishes the deletion

                async def deleted() -> bool:
                    rows = [d for d in await here.call("workspaces.deletions") if d["workspace_id"] == ws]
                    return rows[0]["state"] == "deleted"

                await _until(deleted, "the deletion finished")
            assert not host_pids(pid, "sleep")  # cancelled by the process that drove it, before the files went
    assert not (data / ws).exists()
