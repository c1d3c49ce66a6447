"""No database file is made for something that is not a recorded workspace: a folder of the server's own whose
name has a workspace id's shape (``rigs``), or a workspace deleted while a process still held its handles. Only
a workspace's creation makes its database (migrated, complete); every other connection opens an existing file."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import sqlalchemy as sa

from hangar.core.db import _async_engine
from hangar.core.sqlite_writer import SqliteWriter
from hangar.core.stamps import StampReader
from hangar.errors import NotFound
from tests.support.server import running_server

pytestmark = pytest.mark.sqlite_only("SQLite files")


async def test_no_handle_makes_a_database_file(tmp_path: Path) -> None:
    async with running_server(tmp_path / "data") as srv:
        dbs = srv.ctx.dbs
        rigs = srv.data_dir / "rigs"
        assert rigs.is_dir()  # the rigs part's folder: its name passes as a workspace id
        for open_one in (dbs.workspace, dbs.writer):
            with pytest.raises(NotFound):
                await open_one("rigs")
        with pytest.raises(NotFound):
            await dbs.stamp("rigs", "spaces")
        stray = rigs / "workspace.db"
        # The handles themselves, as a process holds them for a workspace whose file went meanwhile.
        engine = _async_engine(stray)
        try:
            with pytest.raises(sa.exc.OperationalError):
                async with engine.connect() as conn:
                    await conn.execute(sa.text("SELECT 1"))
        finally:
            await engine.dispose()
        with pytest.raises(sqlite3.OperationalError):
            StampReader(str(stray)).fetch("SELECT 1")
        writer = SqliteWriter(str(stray))
        try:
            with pytest.raises(sqlite3.OperationalError):
                await writer.call(lambda conn: conn.execute("SELECT 1"))
        finally:
            await writer.aclose()
        assert not stray.exists()


async def test_a_deleted_workspace_s_handles_make_no_file(tmp_path: Path) -> None:
    """A workspace deleted while this process holds its engine: a new connection fails, nothing reappears."""
    async with running_server(tmp_path / "data") as srv:
        ws = await srv.new_workspace("doomed")
        engine = await srv.ctx.dbs.workspace(ws)
        db = srv.data_dir / ws / "workspace.db"
        db.unlink()
        for suffix in ("-wal", "-shm"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)
        await engine.dispose()  # the pool's connections go; the next one is made afresh
        with pytest.raises(sa.exc.OperationalError):
            async with engine.connect() as conn:
                await conn.execute(sa.text("SELECT 1"))
        assert not db.exists()
