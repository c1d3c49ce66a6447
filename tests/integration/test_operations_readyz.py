"""``GET /readyz`` on the real server: ready only while every database answers at its migration head."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import httpx
from alembic.script import ScriptDirectory

from hangar.core.tables import MIGRATIONS
from tests.support.server import RunningServer, running_server


async def readyz(srv: RunningServer) -> httpx.Response:
    async with httpx.AsyncClient() as http:
        return await http.get(f"{srv.url}/readyz")


async def test_ready_then_not_while_a_workspace_database_is_behind(tmp_path: Path) -> None:
    async with running_server(tmp_path) as srv:
        ws = await srv.new_workspace("ops")
        ready = await readyz(srv)
        assert (ready.status_code, ready.json()) == (200, {"status": "ready"})
        # Every HTTP answer names the request it answered, as the log does.
        assert (
            len(ready.headers["x-request-id"]) == 16
            and ready.headers["x-request-id"] != ((await readyz(srv)).headers["x-request-id"])
        )
        # The database as an older version left it (restored from an old backup under the running server).
        script = ScriptDirectory(str(MIGRATIONS.location))
        head = script.get_revision(script.get_current_head())
        assert head is not None and isinstance(head.down_revision, str)
        db = sqlite3.connect(srv.ctx.datadir.workspace_db(ws))
        with db:
            db.execute("UPDATE alembic_version_core SET version_num = ?", (head.down_revision,))
        behind = await readyz(srv)
        assert behind.status_code == 503
        # The reason says what; it names no workspace (anyone may ask).
        assert behind.json() == {"status": "a workspace database is not at its migration head"}
        with db:
            db.execute("UPDATE alembic_version_core SET version_num = ?", (head.revision,))
        db.close()
        assert (await readyz(srv)).status_code == 200


async def test_not_ready_while_a_database_cannot_be_read(tmp_path: Path) -> None:
    async with running_server(tmp_path) as srv:
        ws = await srv.new_workspace("ops")
        assert (await readyz(srv)).status_code == 200
        path = srv.ctx.datadir.workspace_db(ws)
        original = path.read_bytes()
        with path.open("r+b") as f:  # a file that is no database any more (unreadable even to root)
            f.write(b"not a database" * 512)
        broken = await readyz(srv)
        assert broken.status_code == 503
        assert broken.json()["status"].startswith("a workspace database is ")
        path.write_bytes(original)
