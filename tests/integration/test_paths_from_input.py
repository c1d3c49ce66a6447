"""Ids from input are records to look up, never paths: over the real socket of the real server."""

from __future__ import annotations

from pathlib import Path

import pytest

from hangar.core.paths import contained
from hangar.errors import InvalidArgs
from tests.integration.test_workspace_repos import make_repo
from tests.support.rpc import RpcClient, RpcError
from tests.unit.agents.support import workspace_server


def _tree(root: Path) -> dict[str, bytes | None]:
    """Every entry beneath ``root``, with each file's bytes (a SQLite log's only its name: the server writes it)."""
    return {
        str(p.relative_to(root)): p.read_bytes() if p.is_file() and not p.name.endswith(("-wal", "-shm")) else None
        for p in sorted(root.rglob("*"))
    }


async def test_cleanup_with_a_path_as_space_id_deletes_nothing(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("keep")
    async with workspace_server(tmp_path) as (srv, client, ws):
        other = await srv.new_workspace("other")
        before = _tree(srv.data_dir)
        for bad in (str(victim), f"../../{other}", f"../{other}", "..", "a/b", "x" * 200_000):
            with pytest.raises(RpcError) as err:
                await client.call("worktrees.cleanup", workspace_id=ws, space_id=bad)
            assert err.value.code in ("not_found", "invalid_args"), (bad[:40], err.value)
        assert (victim / "keep.txt").read_text() == "keep"
        assert _tree(srv.data_dir) == before
        assert (await client.call("spaces.list", workspace_id=other)) == {"spaces": []}


async def test_a_ticket_id_that_is_a_path_creates_no_directory(tmp_path: Path) -> None:
    src = make_repo(tmp_path / "src", "app")
    async with workspace_server(tmp_path) as (srv, client, ws):
        repo = await client.call("repos.register", workspace_id=ws, path=str(src))
        for bad in ("../../x", "../../../escape", "/tmp/abs"):
            with pytest.raises(RpcError) as err:
                await client.call("worktrees.add", workspace_id=ws, repo=repo["id"], ticketId=bad)
            assert err.value.code in ("not_found", "invalid_args")
        assert not (srv.data_dir / "x").exists() and not (srv.data_dir.parent / "escape").exists()
        assert not Path("/tmp/abs").exists()
        ticket = await client.call("tickets.create", workspace_id=ws, title="real one")
        wt = await client.call("worktrees.add", workspace_id=ws, repo=repo["id"], ticketId=ticket["id"])
        assert Path(wt["path"]).is_relative_to(srv.data_dir / ws / "worktrees" / "tickets")


async def test_guests_see_no_server_paths(tmp_path: Path) -> None:
    async with workspace_server(tmp_path) as (srv, client, ws):
        space = await client.call("spaces.create", workspace_id=ws, title="work")
        assert "folder" in await client.call("spaces.get", workspace_id=ws, space_id=space["id"])
        guest = await srv.new_user_token(ws, "guest", name="guest")
        async with RpcClient(srv.ws_url, guest) as g:
            seen = await g.call("spaces.get", workspace_id=ws, space_id=space["id"])
            assert "folder" not in seen and str(srv.data_dir) not in str(seen)
            listed = await g.call("worktrees.list", workspace_id=ws)
            assert str(srv.data_dir) not in str(listed)


def test_contained_refuses_what_is_not_one_plain_name(tmp_path: Path) -> None:
    assert contained(tmp_path, "a", "b", field="f") == tmp_path / "a" / "b"
    (tmp_path / "link").symlink_to("/etc")
    for bad in ("..", ".", "", "a/b", "x\0y", "é" * 200, "link"):
        with pytest.raises(InvalidArgs) as err:
            contained(tmp_path, bad, "passwd" if bad == "link" else "z", field="f")
        assert err.value.field == "f"
    assert contained(tmp_path, "日本語 ✨", field="f").name == "日本語 ✨"
