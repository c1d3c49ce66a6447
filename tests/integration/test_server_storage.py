"""``server.storage`` on a running server: per workspace its database and its files (its folder's trees and its
pipeline runs' folders), and the server's own; a symlink to a huge file outside counts as the link only, a
symlinked folder is not walked through; the walk's time bound (none left: incomplete, said so); the server owner's
alone."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hangar.core.part import FolderFinders
from hangar.retention.storage import measure
from tests.support.rpc import RpcClient, RpcError
from tests.support.server import running_server

HUGE = 1 << 30


async def test_storage_per_workspace_counts_symlinks_as_links(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    huge = outside / "huge.bin"
    with huge.open("wb") as f:  # sparse: a gigabyte that takes no disk
        f.truncate(HUGE)
    async with running_server(tmp_path / "data") as srv, RpcClient(srv.ws_url, srv.owner_token) as c:
        ws = (await c.call("workspaces.create", name="measured"))["id"]
        other = (await c.call("workspaces.create", name="other"))["id"]
        tree = srv.data_dir / ws / "worktrees" / "wt"
        tree.mkdir(parents=True)
        (tree / "a.txt").write_bytes(b"x" * 1000)
        os.symlink(huge, tree / "link-to-huge")
        os.symlink(outside, tree / "link-to-folder")
        run_dir = srv.data_dir / "pipelines" / "run-of-ws"
        run_dir.mkdir(parents=True)
        (run_dir / "out.log").write_bytes(b"y" * 500)
        await _record_run(srv, ws, "run-of-ws")
        (srv.data_dir / "rigs").mkdir(exist_ok=True)
        (srv.data_dir / "rigs" / "state").write_bytes(b"z" * 300)

        shown = await c.call("server.storage")

        assert shown["complete"] is True
        by_id = {w["id"]: w for w in shown["workspaces"]}
        assert by_id[ws]["name"] == "measured"
        links = len(os.fsencode(str(huge))) + len(os.fsencode(str(outside)))
        assert by_id[ws]["filesBytes"] == 1000 + links + 500  # the links as links; the run's folder is its own
        assert by_id[ws]["databaseBytes"] > 0 and by_id[other]["filesBytes"] == 0
        assert shown["server"]["databaseBytes"] > 0
        assert shown["server"]["filesBytes"] >= 300 and shown["server"]["filesBytes"] < HUGE
        # The run's folder is counted for its workspace, not again for the server.
        fewer = await measure(srv.ctx, [], srv.ctx.service(FolderFinders).finders)
        assert fewer.server.files_bytes >= shown["server"]["filesBytes"] + 500


async def test_the_walk_is_bounded_in_time(tmp_path: Path) -> None:
    async with running_server(tmp_path / "data") as srv, RpcClient(srv.ws_url, srv.owner_token) as c:
        ws = (await c.call("workspaces.create", name="measured"))["id"]
        (srv.data_dir / ws / "spaces").mkdir(parents=True, exist_ok=True)
        (srv.data_dir / ws / "spaces" / "f").write_bytes(b"x" * 10)
        finders = srv.ctx.service(FolderFinders).finders
        whole = await measure(srv.ctx, [(ws, "measured")], finders, budget=60)
        assert whole.complete and whole.workspaces[0][2].files_bytes == 10
        cut = await measure(srv.ctx, [(ws, "measured")], finders, budget=0)
        assert not cut.complete and cut.workspaces[0][2].files_bytes == 0


async def test_storage_is_the_server_owners(tmp_path: Path) -> None:
    async with running_server(tmp_path / "data") as srv:
        token = await srv.new_user_token(None, name="someone")
        async with RpcClient(srv.ws_url, token) as c:
            for op in ("server.storage", "server.retention"):
                with pytest.raises(RpcError) as refused:
                    await c.call(op)
                assert refused.value.code == "forbidden"


async def _record_run(srv: object, ws: str, run_id: str) -> None:
    import sqlalchemy as sa

    from hangar.pipelines import tables as pt

    ctx = srv.ctx  # type: ignore[attr-defined]
    engine = await ctx.dbs.workspace(ws)
    now = ctx.clock.now()
    row = {
        "id": run_id, "template_id": "t", "template": {}, "status": "completed", "trigger_kind": "manual",
        "payload": {}, "state": {}, "dry_run": False, "created_at": now, "updated_at": now, "finished_at": now,
    }  # fmt: skip
    async with engine.begin() as conn:
        await conn.execute(sa.insert(pt.runs).values(**row))
