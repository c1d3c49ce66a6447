"""``GET /readyz`` on the real server: ready only while every database answers at its migration head."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from pathlib import Path

import httpx
import pytest
from alembic.script import ScriptDirectory

from hangar.core.clock import FakeClock
from hangar.core.tables import MIGRATIONS
from hangar.server.readiness import ANSWER_KEPT_S
from tests.support.server import RunningServer, running_server


async def readyz(srv: RunningServer) -> httpx.Response:
    async with httpx.AsyncClient() as http:
        return await http.get(f"{srv.url}/readyz")


async def test_ready_then_not_while_a_workspace_database_is_behind(tmp_path: Path) -> None:
    clock = FakeClock()
    async with running_server(tmp_path, clock=clock) as srv:
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
        clock.advance(ANSWER_KEPT_S)  # past the kept answer
        behind = await readyz(srv)
        assert behind.status_code == 503
        # The reason says what; it names no workspace (anyone may ask).
        assert behind.json() == {"status": "a workspace database is not at its migration head"}
        with db:
            db.execute("UPDATE alembic_version_core SET version_num = ?", (head.revision,))
        db.close()
        clock.advance(ANSWER_KEPT_S)
        assert (await readyz(srv)).status_code == 200


async def test_an_answer_is_kept_two_seconds_and_shared_by_callers_meanwhile(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Anyone may ask and a check reads every workspace database: a flood costs one check per kept answer.
    clock = FakeClock()
    async with running_server(tmp_path, clock=clock) as srv:
        ws = await srv.new_workspace("ops")
        assert (await readyz(srv)).status_code == 200
        db = sqlite3.connect(srv.ctx.datadir.workspace_db(ws))
        with db:
            db.execute("UPDATE alembic_version_core SET version_num = 'behind'")
        db.close()
        clock.advance(ANSWER_KEPT_S - 0.001)  # the ready answer is still kept
        assert (await readyz(srv)).status_code == 200
        clock.advance(0.001)  # at the line: checked again, once for twenty callers
        with caplog.at_level(logging.WARNING, logger="hangar.server.readiness"):
            answers = await asyncio.gather(*(readyz(srv) for _ in range(20)))
        assert {a.status_code for a in answers} == {503}
        assert len([r for r in caplog.records if r.getMessage().startswith("not ready")]) == 1


async def test_not_ready_while_a_database_cannot_be_read(tmp_path: Path) -> None:
    clock = FakeClock()
    async with running_server(tmp_path, clock=clock) as srv:
        ws = await srv.new_workspace("ops")
        assert (await readyz(srv)).status_code == 200
        path = srv.ctx.datadir.workspace_db(ws)
        original = path.read_bytes()
        with path.open("r+b") as f:  # a file that is no database any more (unreadable even to root)
            f.write(b"not a database" * 512)
        clock.advance(ANSWER_KEPT_S)
        broken = await readyz(srv)
        assert broken.status_code == 503
        assert broken.json()["status"].startswith("a workspace database is ")
        path.write_bytes(original)
