"""``workspaces.delete`` against a real server: who may, the typed confirmation, what goes (records, files,
credentials, access), what must not (a file a worktree symlink points at), and a deletion killed half way that the
next start finishes."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from hangar.chat.descriptor import DESCRIPTORS
from hangar.chat.service import ChatService
from hangar.errors import NotFound
from hangar.identity import IdentityService
from hangar.identity.models import DeviceScope
from hangar.server.deletion.steps import HOLD_VARIABLE
from tests.integration.test_watches_end import ended
from tests.integration.test_workspace_repos import make_repo
from tests.support.processes import cli, hangar_serve
from tests.support.records import stored_secret
from tests.support.rpc import RpcClient, RpcError
from tests.support.server import RunningServer, running_server


async def has_database(srv: RunningServer, ws: str) -> bool:
    """Whether the workspace's database (its SQLite file, or on PostgreSQL its schema) is there."""
    await srv.ctx.dbs.forget_workspace(ws)  # opened afresh: not a handle kept from before
    try:
        await srv.ctx.dbs.workspace(ws)
    except NotFound:
        return False
    return True


async def _filled(srv: RunningServer, client: RpcClient, tmp_path: Path, name: str) -> dict[str, Any]:
    """A workspace with a repo, a space with its worktree, a message and chat credentials."""
    ws = await srv.new_workspace(name)
    repo = await client.call("repos.register", workspace_id=ws, path=str(make_repo(tmp_path / f"src-{name}", "app")))
    space = await client.call("spaces.create", workspace_id=ws, title="work", repoIds=[repo["id"]])
    await client.call("messages.post", workspace_id=ws, space_id=space["id"], content="hello")
    chat = srv.ctx.service(ChatService)
    workspace = await chat.workspace(ws)
    provider = next(iter(DESCRIPTORS))
    chat.files.write(workspace, provider, {"botToken": "xoxb-secret-bot-token", "appToken": "xapp-secret-app"})
    return {"ws": ws, "space": space, "folder": Path(space["folder"])}


async def test_the_owner_deletes_a_workspace_and_everything_in_it(tmp_path: Path) -> None:
    victim = tmp_path / "outside"
    victim.mkdir()
    (victim / "precious.txt").write_text("keep me\n")
    async with running_server(tmp_path / "data") as srv, RpcClient(srv.ws_url, srv.owner_token) as owner:
        made = await _filled(srv, owner, tmp_path, "doomed")
        ws, folder = made["ws"], made["folder"]
        other = await srv.new_workspace("kept")
        # A worktree (something a rig could write) swapped for a symlink to a folder outside the data directory.
        worktree = next(p for p in folder.iterdir() if p.is_dir())
        os.symlink(victim, folder / "escape")
        os.symlink(victim / "precious.txt", worktree / "link-to-file")
        identity = srv.ctx.service(IdentityService)
        narrowed = await identity.issue_device(srv.owner_id, "limited", scope=DeviceScope(workspace_id=ws))
        invite = (await owner.call("members.invite", workspace_id=ws, role="member"))["code"]
        member_token = await srv.new_user_token(ws, "member", name="watcher")
        provider = next(iter(DESCRIPTORS))
        assert stored_secret(srv.data_dir, f"chat_credentials/{provider}", ws) is not None  # file or sealed row

        async with RpcClient(srv.ws_url, member_token) as member:
            watch = await member.watch("events.watch", workspace_id=ws)
            with pytest.raises(RpcError) as wrong:
                await owner.call("workspaces.delete", workspace_id=ws, confirm="xoxb-pasted-by-mistake")
            assert wrong.value.code == "invalid_args"
            assert "'doomed'" in wrong.value.message and "xoxb" not in wrong.value.message
            assert await has_database(srv, ws)  # a refusal changes nothing

            done = await owner.call("workspaces.delete", workspace_id=ws, confirm="doomed")
            assert (done["workspace_id"], done["name"], done["state"]) == (ws, "doomed", "deleted")
            assert done["requestedBy"] == f"user:{srv.owner_id}" and done["finishedAt"] is not None

            # The member's watch ended and nothing is delivered after.
            end = await ended(watch)
            assert end["error"]["code"] == "forbidden"
            with pytest.raises(RpcError) as gone:
                await member.call("spaces.list", workspace_id=ws)
            assert gone.value.code == "forbidden"

        assert not (srv.data_dir / ws).exists() and not await has_database(srv, ws)  # SQLite file or schema
        assert stored_secret(srv.data_dir, f"chat_credentials/{provider}", ws) is None  # its secrets went with it
        assert not list((srv.data_dir / "disks").glob(f"*{ws}*"))  # the space's disk went with its folder
        assert (victim / "precious.txt").read_text() == "keep me\n"  # the symlinks went, not what they point at
        assert await has_database(srv, other)
        listed = [w["id"] for w in await owner.call("workspaces.list")]
        assert ws not in listed and other in listed
        with pytest.raises(RpcError) as refused:
            await owner.call("spaces.list", workspace_id=ws)
        assert refused.value.code == "forbidden"
        async with RpcClient(srv.ws_url, narrowed) as limited:
            with pytest.raises((RpcError, ConnectionError)):
                await limited.call("users.me")
        async with httpx.AsyncClient() as http:
            paired = await http.post(f"{srv.url}/auth/pair", json={"code": invite, "deviceName": "late"})
        assert paired.status_code >= 400
        deletions = await owner.call("workspaces.deletions")
        assert [(d["workspace_id"], d["name"], d["state"]) for d in deletions] == [(ws, "doomed", "deleted")]
        with pytest.raises(RpcError) as again:
            await owner.call("workspaces.delete", workspace_id=ws, confirm="doomed")
        assert again.value.code == "not_found"


@pytest.mark.parametrize(
    ("role", "allowed"),
    [("guest", False), ("member", False), ("admin", True), ("owner", True), (None, False)],
)
async def test_who_may_delete_by_role(tmp_path: Path, role: str | None, allowed: bool) -> None:
    async with running_server(tmp_path) as srv:
        ws = await srv.new_workspace("target")
        other = await srv.new_workspace("elsewhere")
        # ``None``: a member of another workspace only.
        token = await srv.new_user_token(ws if role is not None else other, role or "owner", name="caller")
        async with RpcClient(srv.ws_url, token) as client:
            with pytest.raises(RpcError) as record:  # the server's record of deletions is the server owner's
                await client.call("workspaces.deletions")
            assert record.value.code == "forbidden"
            if allowed:
                done = await client.call("workspaces.delete", workspace_id=ws, confirm="target")
                assert done["state"] == "deleted"
                return
            with pytest.raises(RpcError) as refused:
                await client.call("workspaces.delete", workspace_id=ws, confirm="target")
            assert refused.value.code == "forbidden"
            assert ("you are " + role) in refused.value.message if role else "not a member" in refused.value.message
        assert await srv.ctx.service(IdentityService).get_workspace(ws) is not None
        assert await has_database(srv, ws)


async def test_the_server_owner_deletes_a_workspace_they_do_not_belong_to(tmp_path: Path) -> None:
    async with running_server(tmp_path) as srv:
        someone = await srv.new_user_token(name="someone")
        ws = await srv.new_workspace("theirs", owner_token=someone)
        async with RpcClient(srv.ws_url, srv.owner_token) as owner:
            assert ws not in [w["id"] for w in await owner.call("workspaces.list")]
            done = await owner.call("workspaces.delete", workspace_id=ws, confirm="theirs")
        assert done["state"] == "deleted" and not (srv.data_dir / ws).exists()


async def test_narrowed_credentials_cannot_delete(tmp_path: Path) -> None:
    """A credential limited to the workspace, a read-only one, or one issued to an application (an OAuth client's)
    deletes nothing, even the server owner's."""
    async with running_server(tmp_path) as srv:
        ws = await srv.new_workspace("target")
        identity = srv.ctx.service(IdentityService)
        scopes = (DeviceScope(workspace_id=ws), DeviceScope(read_only=True), DeviceScope(client_id="an-mcp-client"))
        for scope in scopes:
            token = await identity.issue_device(srv.owner_id, "narrow", scope=scope)
            async with RpcClient(srv.ws_url, token) as client:
                with pytest.raises(RpcError) as refused:
                    await client.call("workspaces.delete", workspace_id=ws, confirm="target")
            assert refused.value.code == "forbidden"
        assert await has_database(srv, ws)


async def test_bad_arguments_are_refused_naming_them(tmp_path: Path) -> None:
    async with running_server(tmp_path) as srv, RpcClient(srv.ws_url, srv.owner_token) as owner:
        ws = await srv.new_workspace("named")
        with pytest.raises(RpcError) as missing:
            await owner.call("workspaces.delete", workspace_id=ws)
        assert missing.value.code == "invalid_args" and "confirm" in missing.value.message
        with pytest.raises(RpcError) as unknown:
            await owner.call("workspaces.delete", workspace_id="no-such-workspace", confirm="x")
        assert unknown.value.code == "not_found"
        with pytest.raises(RpcError) as near:
            await owner.call("workspaces.delete", workspace_id=ws, confirm="Named")  # exactly, case and all
        assert near.value.code == "invalid_args"
        assert (await owner.call("workspaces.delete", workspace_id=ws, confirm="named"))["state"] == "deleted"
        # ``confirm`` is at most as long as a name may be: at the limit it deletes, one past it is refused as such.
        longest = await owner.call("workspaces.create", name="n" * 200)
        with pytest.raises(RpcError) as too_long:
            await owner.call("workspaces.delete", workspace_id=longest["id"], confirm="n" * 201)
        assert too_long.value.code == "invalid_args" and "200" in too_long.value.message
        assert "n" * 201 not in too_long.value.message
        done = await owner.call("workspaces.delete", workspace_id=longest["id"], confirm="n" * 200)
        assert done["state"] == "deleted"


async def _step_reached(client: RpcClient, ws: str, step: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rows = [d for d in await client.call("workspaces.deletions") if d["workspace_id"] == ws]
        if rows and rows[0]["step"] == step:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"the deletion of {ws} never reached step {step}")


@pytest.mark.parametrize("step", ["recorded", "stopped", "files"])
async def test_a_deletion_killed_half_way_finishes_at_the_next_start(tmp_path: Path, step: str) -> None:
    data = tmp_path / "data"
    cli(data, "admin", "owner-token")  # makes the data directory and the owner
    token = cli(data, "admin", "owner-token").stdout.strip()
    with hangar_serve(data, "--no-prepare-pack", env={HOLD_VARIABLE: step}) as serving:
        async with RpcClient(serving.ws_url, token) as client, RpcClient(serving.ws_url, token) as watcher:
            ws = (await client.call("workspaces.create", name="halfway"))["id"]
            repo = await client.call("repos.register", workspace_id=ws, path=str(make_repo(tmp_path / "src", "app")))
            space = await client.call("spaces.create", workspace_id=ws, title="work", repoIds=[repo["id"]])
            await client.call("messages.post", workspace_id=ws, space_id=space["id"], content="hello")
            pending = asyncio.create_task(client.call("workspaces.delete", workspace_id=ws, confirm="halfway"))
            await _step_reached(watcher, ws, step)
            # Held there: the workspace is refused already, and a second deletion is told one is under way.
            with pytest.raises(RpcError) as refused:
                await watcher.call("spaces.list", workspace_id=ws)
            assert refused.value.code == "forbidden"
            with pytest.raises(RpcError) as twice:
                await watcher.call("workspaces.delete", workspace_id=ws, confirm="halfway")
            assert twice.value.code == "conflict"
            serving.kill9()
            pending.cancel()
            await asyncio.gather(pending, return_exceptions=True)
    if step != "files":
        assert (data / ws / "repos").exists()  # killed before its files went
    with hangar_serve(data, "--no-prepare-pack") as serving:
        async with RpcClient(serving.ws_url, token) as client:
            rows = [d for d in await client.call("workspaces.deletions") if d["workspace_id"] == ws]
            assert [(r["state"], r["step"], r["name"]) for r in rows] == [("deleted", "deleted", "halfway")]
            assert ws not in [w["id"] for w in await client.call("workspaces.list")]
            with pytest.raises(RpcError):
                await client.call("spaces.list", workspace_id=ws)
    assert not (data / ws).exists()


async def test_a_deletion_through_another_server_refuses_and_ends_at_once_here(tmp_path: Path) -> None:
    """Two servers on one data directory: a deletion answered by one is seen by the other on its next request
    (authority is read per decision, never from a copy), and its open watch ends with nothing delivered after."""
    data = tmp_path / "data"
    async with running_server(data) as srv:
        ws = await srv.new_workspace("shared")
        member = await srv.new_user_token(ws, "member", name="member")
        async with RpcClient(srv.ws_url, member) as here, RpcClient(srv.ws_url, srv.owner_token) as owner:
            space = await owner.call("spaces.create", workspace_id=ws, title="s")
            watch = await here.watch("events.watch", workspace_id=ws)
            assert len(await here.call("spaces.list", workspace_id=ws)) == 1
            with hangar_serve(data, "--no-prepare-pack") as other:
                async with RpcClient(other.ws_url, srv.owner_token) as there:
                    await there.call("workspaces.delete", workspace_id=ws, confirm="shared")
            with pytest.raises(RpcError) as refused:
                await here.call("spaces.list", workspace_id=ws)
            assert refused.value.code == "forbidden"
            with pytest.raises(RpcError):
                await owner.call("messages.post", workspace_id=ws, space_id=space["id"], content="after")
            end = await ended(watch)
            assert end["error"]["code"] == "forbidden"
            with pytest.raises(TimeoutError):
                await watch.next(timeout=0.3)
    assert not (data / ws).exists()


@pytest.mark.skipif(shutil.which("chattr") is None, reason="chattr (e2fsprogs) is not installed")
async def test_files_that_cannot_be_removed_leave_the_deletion_to_the_next_start(tmp_path: Path) -> None:
    """A file the server cannot remove (immutable): the workspace is gone for everyone at once, the op says the
    rest is finished at the next start, and the next start does."""
    data = tmp_path / "data"
    async with running_server(data) as srv, RpcClient(srv.ws_url, srv.owner_token) as owner:
        made = await _filled(srv, owner, tmp_path, "stuck")
        ws = made["ws"]
        stuck = data / ws / "repos" / "stuck.txt"
        stuck.write_text("cannot go yet\n")
        if subprocess.run(["chattr", "+i", str(stuck)], capture_output=True).returncode != 0:
            pytest.skip("this filesystem has no immutable files")
        try:
            with pytest.raises(RpcError) as half:
                await owner.call("workspaces.delete", workspace_id=ws, confirm="stuck")
            assert half.value.code == "unavailable" and "next start" in half.value.message
            rows = await owner.call("workspaces.deletions")
            assert [(r["state"], r["step"]) for r in rows] == [("deleting", "stopped")]
            with pytest.raises(RpcError) as refused:
                await owner.call("spaces.list", workspace_id=ws)
            assert refused.value.code == "forbidden"
            with pytest.raises(RpcError) as again:
                await owner.call("workspaces.delete", workspace_id=ws, confirm="stuck")
            assert again.value.code == "conflict" and "being deleted" in again.value.message
        finally:
            subprocess.run(["chattr", "-i", str(stuck)], check=True)
    async with running_server(data) as srv, RpcClient(srv.ws_url, srv.owner_token) as owner:
        rows = await owner.call("workspaces.deletions")
        assert [(r["state"], r["step"]) for r in rows] == [("deleted", "deleted")]
    assert not (data / ws).exists()
