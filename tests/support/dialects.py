"""An application context on either database dialect, for the stores that reach their database through
``hangar.core.db`` (SQLAlchemy Core, async): SQLite files in a data directory, or one PostgreSQL database with a
schema per workspace (``Databases(..., postgresql=URL)``).

Every store works on both: those on the write path of ``hangar.core.write_conn`` (events, the audit log, seeds,
pipeline ticks, a rig's action log, the SSO sign-in state) reach PostgreSQL through ``hangar.core.pg_writer``.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hangar.config import Settings
from hangar.core.clock import FakeClock
from hangar.core.context import AppContext
from hangar.core.datadir import DataDir
from hangar.core.db import Databases
from hangar.core.event_types import EventRegistry
from hangar.core.events import EventBus
from hangar.identity.authority import AUTHORITY
from hangar.identity.service import IdentityService
from hangar.server.context_factory import assemble_context
from hangar.server.parts import all_parts

DIALECTS = ("sqlite", "postgresql")


def database_url(dialect: str, request: pytest.FixtureRequest) -> str | None:
    """A fresh PostgreSQL database for a ``postgresql`` run (the session's cluster starts on first use); ``None``
    for SQLite."""
    return str(request.getfixturevalue("pg_url")) if dialect == "postgresql" else None


@contextlib.asynccontextmanager
async def app_on(tmp_path: Path, postgresql: str | None) -> AsyncIterator[AppContext]:
    """A context with its databases opened (on PostgreSQL when ``postgresql`` is a URL) and the identity
    service; parts are not started (each test makes the services it exercises)."""
    parts = all_parts()
    datadir = DataDir(tmp_path / "data").ensure()
    dbs = Databases(datadir, [m for p in parts for m in p.migrations], postgresql=postgresql)
    await dbs.open()
    clock = FakeClock()
    bus = EventBus(dbs, clock, EventRegistry([e for p in parts for e in p.events]))
    app = assemble_context(Settings(data_dir=datadir.root), clock, dbs, bus)
    app.provide(IdentityService(dbs.server, clock, stamp=functools.partial(dbs.stamp, None, AUTHORITY)))
    try:
        yield app
    finally:
        await bus.aclose()
        await dbs.aclose()


@contextlib.asynccontextmanager
async def app_for(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[AppContext]:
    """``app_on`` for the dialect a fixture is parametrized with (``params=DIALECTS``), checked to be that one."""
    async with app_on(tmp_path, database_url(str(request.param), request)) as ctx:
        assert ctx.dbs.server.dialect.name == request.param
        yield ctx
