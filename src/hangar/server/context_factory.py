"""Building the application context: data directory, databases (migrated), secrets, events, audit, identity,
then every part's ``start``. Used by the server and by in-process commands (``hangar pipeline run``)."""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import AsyncIterator, Sequence

from hangar.config import Settings
from hangar.core.audit import AuditLog
from hangar.core.clock import Clock, SystemClock
from hangar.core.context import AppContext
from hangar.core.datadir import DataDir
from hangar.core.db import Databases
from hangar.core.dbfailures import shown
from hangar.core.dblocation import database_for, in_use, record_url
from hangar.core.event_types import EventRegistry
from hangar.core.events import EventBus
from hangar.core.metrics import Metrics
from hangar.core.outbox import Outbox
from hangar.core.part import FolderFinders, Part, kernel_part
from hangar.core.retention import EventFloors
from hangar.core.sealed import SealedSecrets, SealedSecretsFile
from hangar.core.secretkey import KEY_FILE
from hangar.core.secrets import SecretsFile
from hangar.core.settings import WorkspaceSettings
from hangar.httpkit.ratelimit import RateLimits
from hangar.identity.authority import AUTHORITY
from hangar.identity.service import IdentityService
from hangar.server.deletion import tables as deletions

log = logging.getLogger(__name__)


def assemble_context(
    settings: Settings, clock: Clock, dbs: Databases, bus: EventBus, metrics: Metrics | None = None
) -> AppContext:
    """The context around opened databases and their event bus, before any service is provided. The secrets are
    files in the data directory on SQLite, and sealed in the database on PostgreSQL (``sealed_secrets``)."""
    sealed = sealed_secrets(settings, dbs)
    return AppContext(
        metrics=metrics or Metrics(enabled=False),
        settings=settings,
        clock=clock,
        datadir=dbs.datadir,
        dbs=dbs,
        secrets=SecretsFile(dbs.datadir.secrets_file) if sealed is None else SealedSecretsFile(sealed),
        bus=bus,
        audit=AuditLog(dbs, clock),
        sealed=sealed,
    )


def sealed_secrets(settings: Settings, dbs: Databases) -> SealedSecrets | None:
    """On PostgreSQL, the database's sealed secrets under the installation's key (``HANGAR_SECRET_KEY_FILE``, or
    ``<dataDir>/secret-key``); None on SQLite."""
    url = dbs.postgresql_url
    if url is None:
        return None
    # A command on a database URL alone has a scratch folder for a data directory: a key made there would be lost.
    make_key = settings.secret_key_file is not None or not settings.database_only
    return SealedSecrets(
        dbs.sync_engine(), settings.secret_key_file or dbs.datadir.root / KEY_FILE, shown(url), make_key=make_key
    )


@contextlib.asynccontextmanager
async def open_context(
    settings: Settings,
    *,
    clock: Clock | None = None,
    parts: Sequence[Part] | None = None,
    follow_events: bool = False,
    services: Sequence[object] = (),
    metrics: Metrics | None = None,
) -> AsyncIterator[AppContext]:
    """The context with every part started. ``follow_events`` (the server): the event bus also delivers the
    events other processes record in any workspace, within its tail interval. ``services``: what the composition
    provides before the parts start (the op caller agents use). ``metrics``: the server's own (a command counts
    nothing)."""
    if parts is None:
        from hangar.server.parts import all_parts

        parts = all_parts()
    clock = clock or SystemClock()
    if not any(p.name == "kernel" for p in parts):
        parts = [kernel_part(), *parts]
    async with (
        open_databases(settings, parts) as dbs,
        _started(settings, clock, parts, dbs, follow_events, services, metrics) as ctx,
    ):
        yield ctx


@contextlib.asynccontextmanager
async def open_databases(
    settings: Settings, parts: Sequence[Part], *, repoint: bool = False
) -> AsyncIterator[Databases]:
    """The data directory's databases (where ``hangar.core.dblocation`` says they live), opened: migrated to the
    head of ``parts``' migration sets and checked. The data directory's in-use lock is held until the block ends.
    A database given by URL is recorded in the data directory once it has opened; one other than the recorded
    database is refused unless ``repoint`` (``hangar admin set-database-url``)."""
    datadir = DataDir(settings.data_dir).ensure()
    given = settings.given_database_url
    database = database_for(datadir.root, given, repoint=repoint)
    if database is not None and database.password is None and settings.database_password is not None:
        database = database.set(password=settings.database_password)
    with in_use(datadir.root):
        dbs = Databases(
            datadir,
            [m for p in parts for m in p.migrations],
            postgresql=None if database is None else database.render_as_string(hide_password=False),
        )
        try:
            await dbs.open()
            if database is not None and given is not None:
                record_url(datadir.root, database)  # every later command on this data directory opens it too
            yield dbs
        finally:
            await dbs.aclose()


@contextlib.asynccontextmanager
async def _started(
    settings: Settings,
    clock: Clock,
    parts: Sequence[Part],
    dbs: Databases,
    follow_events: bool,
    services: Sequence[object],
    metrics: Metrics | None,
) -> AsyncIterator[AppContext]:
    """The context around opened databases, with every part started (and stopped when the block ends)."""
    registry = EventRegistry([e for p in parts for e in p.events])
    bus = EventBus(dbs, clock, registry)
    relay = Outbox(dbs.server, bus)
    identity = IdentityService(
        dbs.server,
        clock,
        stamp=functools.partial(dbs.stamp, None, AUTHORITY),
        relay=relay.relay,
        settings=[s for p in parts for s in p.server_settings],
        # The record of deletions, where the deletion part keeps one (a tool's smaller set of parts may not).
        deleted=(
            functools.partial(deletions.was_deleted, dbs.server)
            if any(deletions.MIGRATIONS in p.migrations for p in parts)
            else None
        ),
    )
    ctx = assemble_context(settings, clock, dbs, bus, metrics)
    ctx.provide(identity)
    ctx.provide(relay)
    for service in services:
        ctx.provide(service)
    ctx.provide(RateLimits(clock.monotonic))  # the injectable clock: refills are tested without waiting
    ctx.provide(WorkspaceSettings(dbs, clock, [s for p in parts for s in p.settings]))
    ctx.provide(EventFloors([p.event_floor for p in parts if p.event_floor is not None]))
    ctx.provide(FolderFinders(tuple(p.workspace_folders for p in parts if p.workspace_folders is not None)))
    started: list[Part] = []
    try:
        if follow_events:
            await bus.start(identity.list_workspace_ids, identity.authority_stamp, on_change=relay.relay)
            await relay.relay()  # what a process stopped before relaying
        for part in parts:
            if part.start is not None:
                await part.start(ctx)
            started.append(part)
        yield ctx
    finally:
        for part in reversed(started):
            if part.stop is not None:
                try:
                    await part.stop(ctx)
                except Exception:
                    log.exception("part %s failed to stop cleanly", part.name)
        await bus.aclose()
