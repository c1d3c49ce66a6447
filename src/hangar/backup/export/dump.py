"""Writing a workspace's export: its rows as JSON lines, its files, the manifest; streamed as it is written.

The rows are read from one snapshot: on SQLite, a copy taken through the online backup API (the backup's
``copy_database``); on PostgreSQL, one repeatable-read transaction. Each table's rows go to a scratch file first
(a tar entry declares its size before its content), then into the archive; the files are walked beneath a
descriptor without following anything (the backup's ``add_tree``). The archive is written on a thread into a
bounded queue that the HTTP response drains (``stream_export``): memory stays bounded, and a client that goes
away stops the writer.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import queue
import secrets
import shutil
import threading
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar import __version__
from hangar.backup.archive import ArchiveWriter
from hangar.backup.export.layout import (
    FILE_TREES,
    FILES,
    FORMAT,
    LEFT_OUT,
    README,
    README_TEXT,
    TABLES,
    ExportManifest,
    table_path,
)
from hangar.backup.sqlite_source import _SKIP_IN_WORKTREES, add_tree, copy_database
from hangar.backup.take import _PARTIAL
from hangar.core.context import AppContext
from hangar.core.migrating import MigrationSet

SCRATCH = "workspace-transfer"  # scratch folders: .workspace-transfer.<pid>.<n>.partial in the data directory
_CHUNK = 256 << 10
_QUEUED = 8  # chunks in flight between the writer thread and the response
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC


def scratch_folder(app: AppContext) -> Path:
    """A private folder in the data directory (on the workspaces' file system: an import renames files into place),
    named so that ``clear_abandoned`` removes it once its process is gone."""
    folder = app.datadir.root / f".{SCRATCH}.{os.getpid()}.{secrets.token_hex(4)}{_PARTIAL}"
    folder.mkdir(mode=0o700)
    return folder


@dataclass(frozen=True)
class Snapshot:
    """The rows of one workspace, each table in a scratch file of JSON lines, and the schema they were read at."""

    folder: Path
    schema: dict[str, str | None]
    rows: dict[str, int]


def exported_tables(sets: Sequence[MigrationSet]) -> list[sa.Table]:
    """Every table of a workspace database an export carries, in an order that keeps references valid."""
    found: dict[str, sa.Table] = {}
    for mset in sets:
        for metadata in mset.tables:
            for table in metadata.tables.values():
                if table.name not in LEFT_OUT:
                    found.setdefault(table.name, table)
    return [found[n] for n in sorted(found)]


def json_value(value: Any) -> Any:
    """A column's value as the export writes it (timestamps as ISO 8601 text in UTC)."""
    if isinstance(value, datetime):
        value = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
        return value.isoformat().replace("+00:00", "Z")
    if isinstance(value, date):
        return value.isoformat()
    return value


def revisions(conn: sa.Connection, sets: Sequence[MigrationSet]) -> dict[str, str | None]:
    """Each migration set's revision in the database behind ``conn`` (``None``: the set made nothing yet)."""
    present = set(sa.inspect(conn).get_table_names())
    found: dict[str, str | None] = {}
    for mset in sets:
        name = f"alembic_version_{mset.name}"
        found[mset.name] = (
            conn.execute(sa.text(f'SELECT version_num FROM "{name}"')).scalar() if name in present else None
        )
    return found


def dump_rows(conn: sa.Connection, sets: Sequence[MigrationSet], folder: Path) -> Snapshot:
    """Write every exported table's rows to ``folder/<table>.jsonl``, reading through ``conn``."""
    counts: dict[str, int] = {}
    for table in exported_tables(sets):
        n = 0
        with (folder / f"{table.name}.jsonl").open("w", encoding="utf-8") as out:
            key = list(table.primary_key.columns) or list(table.columns)
            for row in conn.execute(sa.select(table).order_by(*key)).mappings():
                out.write(json.dumps({k: json_value(v) for k, v in row.items()}, ensure_ascii=False))
                out.write("\n")
                n += 1
        counts[table.name] = n
    return Snapshot(folder, revisions(conn, sets), counts)


async def snapshot(app: AppContext, workspace_id: str, folder: Path) -> Snapshot:
    """The workspace's rows as they are now, written under ``folder``."""
    sets = app.dbs.workspace_sets
    if app.dbs.on_postgresql:
        engine = await app.dbs.workspace(workspace_id)
        async with engine.connect() as conn:
            ready: AsyncConnection = await conn.execution_options(isolation_level="REPEATABLE READ")
            async with ready.begin():
                return await ready.run_sync(dump_rows, sets, folder)

    def from_copy() -> Snapshot:
        copy = folder / "workspace.db"
        copy_database(app.datadir.workspace_db(workspace_id), copy)
        engine = sa.create_engine(f"sqlite:///{copy}", poolclass=sa.pool.NullPool)
        try:
            with engine.connect() as conn:
                return dump_rows(conn, sets, folder)
        finally:
            engine.dispose()
            copy.unlink()

    return await asyncio.to_thread(from_copy)


def write_archive(out: Any, snap: Snapshot, ws_dir: Path, manifest: ExportManifest) -> None:
    """The export as a tar stream into ``out``; ``manifest`` gives everything but the items, which are added."""
    writer = ArchiveWriter(out)
    writer.add_bytes(README, README_TEXT.encode(), 0o644)
    writer.add_dir(TABLES, 0o755)
    for name in sorted(snap.rows):
        fd = os.open(snap.folder / f"{name}.jsonl", _FILE_FLAGS)
        try:
            writer.add_fd(table_path(name), fd, 0o644)
        finally:
            os.close(fd)
    writer.add_dir(FILES, 0o755)
    for tree in FILE_TREES:
        skip = _SKIP_IN_WORKTREES if tree == "worktrees" else ()
        add_tree(writer, ws_dir / tree, f"{FILES}/{tree}", skip_top=skip)
    writer.finish(replace(manifest, items=tuple(writer.items), schema=snap.schema, rows=snap.rows))


class _Closed(Exception):
    """The reader went away."""


class _Pipe:
    """A file-like sink for the writer thread: chunks of ``_CHUNK`` bytes into a bounded queue."""

    def __init__(self) -> None:
        self.chunks: queue.Queue[bytes | BaseException | None] = queue.Queue(_QUEUED)
        self.closed = threading.Event()
        self._buffer = bytearray()
        self._stopped = False

    def _put(self, item: bytes | BaseException | None) -> None:
        while True:
            if self.closed.is_set():
                self._stopped = True
                raise _Closed
            with contextlib.suppress(queue.Full):
                self.chunks.put(item, timeout=0.5)
                return

    def write(self, data: bytes) -> int:
        if self._stopped:
            # The reader went away and ``_Closed`` stopped the writer: what the tar writer's close writes later
            # (from its finaliser, where a raise is caught by nobody) is dropped.
            return len(data)
        self._buffer += data
        if len(self._buffer) >= _CHUNK:
            self._put(bytes(self._buffer))
            self._buffer.clear()
        return len(data)

    def end(self, error: BaseException | None) -> None:
        with contextlib.suppress(_Closed):
            if error is None and self._buffer:
                self._put(bytes(self._buffer))
            self._put(error)


async def stream_export(app: AppContext, workspace_id: str, name: str, user_id: str) -> AsyncIterator[bytes]:
    """The export of ``workspace_id`` as the chunks of its archive."""
    folder = await asyncio.to_thread(scratch_folder, app)
    pipe = _Pipe()
    try:
        snap = await snapshot(app, workspace_id, folder)
        manifest = ExportManifest(
            format=FORMAT,
            hangar_version=__version__,
            created_at=json_value(app.clock.now()),
            workspace_id=workspace_id,
            workspace_name=name,
            exported_by=user_id,
            schema={},
            rows={},
            items=(),
        )

        def run() -> None:
            error: BaseException | None = None
            try:
                write_archive(pipe, snap, app.datadir.workspace_dir(workspace_id), manifest)
            except _Closed:
                return
            except BaseException as exc:  # handed to the response, which ends the download cut short
                error = exc
            pipe.end(error)

        thread = threading.Thread(target=run, name=f"export-{workspace_id}", daemon=True)
        thread.start()
        while True:
            item = await asyncio.to_thread(pipe.chunks.get)
            if item is None:
                break
            if isinstance(item, BaseException):
                raise item
            yield item
        await asyncio.to_thread(thread.join)
    finally:
        pipe.closed.set()
        await asyncio.to_thread(shutil.rmtree, folder, True)
