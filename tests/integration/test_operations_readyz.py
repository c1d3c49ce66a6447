"""``GET /readyz`` on the real server: ready only while every database answers at its migration head."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa
from alembic.script import ScriptDirectory

from hangar.core.clock import FakeClock
from hangar.core.tables import MIGRATIONS
from hangar.server.readiness import ANSWER_KEPT_S
from tests.support.server import RunningServer, running_server

_CORE_VERSION = sa.table("alembic_version_core", sa.column("version_num"))


async def readyz(srv: RunningServer) -> httpx.Response:
    async with httpx.AsyncClient() as http:
        return await http.get(f"{srv.url}/readyz")


async def set_core_version(srv: RunningServer, ws: str, revision: str) -> None:
    """Stamp the workspace's core migrations at ``revision`` beneath the running server, on its own engine."""
    engine = await srv.ctx.dbs.workspace(ws)
    async with engine.begin() as conn:
        await conn.execute(sa.update(_CORE_VERSION).values(version_num=revision))


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
        await set_core_version(srv, ws, head.down_revision)
        clock.advance(ANSWER_KEPT_S)  # past the kept answer
        behind = await readyz(srv)
        assert behind.status_code == 503
        # The reason says what; it names no workspace (anyone may ask).
        assert behind.json() == {"status": "a workspace database is not at its migration head"}
        await set_core_version(srv, ws, head.revision)
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
        await set_core_version(srv, ws, "behind")
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
        engine = await srv.ctx.dbs.workspace(ws)
        path = srv.ctx.datadir.workspace_db(ws)
        original = path.read_bytes() if engine.dialect.name == "sqlite" else b""
        if engine.dialect.name == "sqlite":
            with path.open("r+b") as f:  # a file that is no database any more (unreadable even to root)
                f.write(b"not a database" * 512)
        else:  # a schema a failed restore left without the table that says where it stands
            async with engine.begin() as conn:
                await conn.execute(sa.text("ALTER TABLE alembic_version_core RENAME TO alembic_version_gone"))
        clock.advance(ANSWER_KEPT_S)
        broken = await readyz(srv)
        assert broken.status_code == 503
        assert broken.json() == {"status": "a workspace database is unreachable"}
        if engine.dialect.name == "sqlite":
            path.write_bytes(original)
        else:
            async with engine.begin() as conn:
                await conn.execute(sa.text("ALTER TABLE alembic_version_gone RENAME TO alembic_version_core"))
        clock.advance(ANSWER_KEPT_S)
        assert (await readyz(srv)).status_code == 200
