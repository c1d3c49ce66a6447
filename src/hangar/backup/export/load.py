"""Reading an uploaded export into the records and files of a new workspace. The archive is hostile input.

In order, and nothing of the new workspace exists until the last step:

1. ``verify``: the whole archive is read once and every item checked against its manifest (size, SHA-256), within
   the import's bounds (items, and each item a plain path an export holds: ``layout.check_layout``); the manifest's
   schema revisions must be ones this version knows (a newer export is refused naming both versions).
2. ``load``: a scratch SQLite database is migrated to the export's revisions, and the archive read again: each
   table's lines (each at most the line bound) are parsed and checked against that table (unknown tables and
   columns are refused by name; values must be of the column's type), files are unpacked beneath a private folder
   (the backup's ``Unpacker``: nothing followed, nothing outside). References between rows are checked, then the
   scratch database is migrated to this version's head: an older export is brought up to date by the same
   migrations a data directory takes.
3. ``seed``: the rows are written into the new workspace's database while it is built under a temporary name
   (``create_workspace``), rewritten where they must be (``Rewrite``); a failure there leaves no workspace.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import sqlalchemy as sa

from hangar.backup.archive import BackupRefused, Item, check_path, scan_as
from hangar.backup.export.layout import (
    FILES,
    LEFT_OUT,
    NOT_LOADED,
    TABLES,
    ExportManifest,
    check_layout,
)
from hangar.backup.restore import Unpacker
from hangar.core.beneath import DIR_FLAGS
from hangar.core.ids import new_id
from hangar.core.migrating import (
    MigrationSet,
    apply_migrations,
    head_revision,
    known_revision,
    migrate_to,
)
from hangar.core.write_conn import WriteConnection, transaction

_BATCH = 500


@dataclass(frozen=True)
class Limits:
    max_bytes: int
    max_items: int
    max_line: int


def _counting(limits: Limits) -> Callable[[Item, Iterator[bytes]], None]:
    seen = 0

    def on_item(item: Item, _pieces: Iterator[bytes]) -> None:
        nonlocal seen
        seen += 1
        if seen > limits.max_items:
            raise BackupRefused(
                f"the export holds more than {limits.max_items} items, more than this server imports "
                "(setting workspaceImport.maxItems)"
            )
        check_layout(item, check_path(item.path))

    return on_item


def verify(stream: IO[bytes], limits: Limits, sets: Sequence[MigrationSet]) -> ExportManifest:
    """Check the whole archive against its manifest and this version's schema; the manifest."""
    manifest = scan_as(stream, ExportManifest.from_json, _counting(limits))
    by_name = {m.name: m for m in sets}
    for name, rev in manifest.schema.items():
        mset = by_name.get(name)
        if mset is None:
            raise BackupRefused(
                f"the export was made by Hangar {manifest.hangar_version}, whose records include {name!r}, which "
                "this version does not know: import it into a server of that version or newer"
            )
        if rev is not None and not known_revision(mset, rev):
            raise BackupRefused(
                f"the export was made by a newer Hangar ({manifest.hangar_version}): its {name} records are at "
                f"revision {rev}, this version's at {head_revision(mset)}; upgrade this server to import it"
            )
    return manifest


def _as_datetime(value: Any) -> datetime:
    if not isinstance(value, str):
        raise ValueError("a timestamp is ISO 8601 text")
    parsed = datetime.fromisoformat(value)
    return parsed.astimezone(UTC).replace(tzinfo=None) if parsed.tzinfo is not None else parsed


def _checked(column: sa.Column[Any], value: Any) -> Any:
    """``value`` as ``column`` (reflected from the scratch database) stores it; ``ValueError`` when it is not of
    the column's type."""
    if value is None:
        return None
    kind = column.type
    if isinstance(kind, sa.JSON):
        return value
    if isinstance(kind, sa.Boolean):
        if not isinstance(value, bool):
            raise ValueError("must be true or false")
        return value
    if isinstance(kind, (sa.DateTime, sa.Date)):
        return _as_datetime(value)
    if isinstance(kind, sa.Integer):
        if not isinstance(value, int) or isinstance(value, bool):
            raise ValueError("must be a whole number")
        return value
    if isinstance(kind, (sa.Float, sa.Numeric)):
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise ValueError("must be a number")
        return value
    if not isinstance(value, str):
        raise ValueError("must be text")
    length = getattr(kind, "length", None)
    if length is not None and len(value) > length:
        raise ValueError(f"is longer than its {length} characters")
    return value


def _lines(pieces: Iterator[bytes], limit: int, where: str) -> Iterator[tuple[int, bytes]]:
    """The lines of a table's file, numbered from 1, each at most ``limit`` bytes."""
    held, number = bytearray(), 0

    def too_long() -> BackupRefused:
        return BackupRefused(
            f"{where} line {number + 1} is longer than the {limit} bytes a row may take "
            "(setting workspaceImport.maxLineBytes)"
        )

    for piece in pieces:
        held += piece
        while (end := held.find(b"\n")) >= 0:
            if end > limit:
                raise too_long()
            number += 1
            yield number, bytes(held[:end])
            del held[: end + 1]
        if len(held) > limit:
            raise too_long()
    if held:
        yield number + 1, bytes(held)


class _Loader:
    """Each item of the second pass: a table's rows into the scratch database, a file beneath ``files_fd``."""

    def __init__(self, conn: sa.Connection, workspace_id: str, files_fd: int, limits: Limits) -> None:
        meta = sa.MetaData()
        meta.reflect(conn)
        self.tables = {t.name: t for t in meta.tables.values() if not t.name.startswith("alembic_version_")}
        self.conn, self.workspace_id, self.limits = conn, workspace_id, limits
        self.unpack = Unpacker(files_fd)
        self.loaded: set[str] = set()

    def __call__(self, item: Item, pieces: Iterator[bytes]) -> None:
        parts = check_path(item.path)
        if parts[0] == FILES and len(parts) > 1:
            moved = Item(f"{self.workspace_id}/{'/'.join(parts[1:])}", item.kind, item.mode, item.size, "", item.target)
            self.unpack(moved, pieces)
        elif parts[0] == TABLES and len(parts) == 2:
            self._table(parts[1].removesuffix(".jsonl"), pieces)

    def _table(self, name: str, pieces: Iterator[bytes]) -> None:
        where = f"the export's table {name!r}"
        table = self.tables.get(name)
        if table is None or name in LEFT_OUT:
            raise BackupRefused(f"{where} is not one a workspace export of its schema revision holds")
        if name in self.loaded:
            raise BackupRefused(f"the export holds {where} twice")
        self.loaded.add(name)
        batch: list[dict[str, Any]] = []
        for number, line in _lines(pieces, self.limits.max_line, where):
            batch.append(self._row(table, line, f"{where} line {number}"))
            if len(batch) >= _BATCH:
                self._insert(table, batch, where)
        self._insert(table, batch, where)

    def _row(self, table: sa.Table, line: bytes, where: str) -> dict[str, Any]:
        try:
            row = json.loads(line)
        except ValueError:
            raise BackupRefused(f"{where} is not JSON") from None
        if not isinstance(row, dict):
            raise BackupRefused(f"{where} is not a JSON object of columns")
        out: dict[str, Any] = {}
        for key, value in row.items():
            column = table.columns.get(key)
            if column is None:
                raise BackupRefused(f"{where} names a column {key[:100]!r} the table does not have")
            try:
                out[key] = _checked(column, value)
            except ValueError as exc:
                raise BackupRefused(f"{where}: column {key} {exc}") from None
        return out

    def _insert(self, table: sa.Table, batch: list[dict[str, Any]], where: str) -> None:
        if not batch:
            return
        shapes: dict[tuple[str, ...], list[dict[str, Any]]] = {}
        for row in batch:  # one statement per set of columns named (an export names them all in every row)
            shapes.setdefault(tuple(row), []).append(row)
        try:
            for rows in shapes.values():
                self.conn.execute(sa.insert(table), rows)
        except sa.exc.SQLAlchemyError as exc:
            said = str(getattr(exc, "orig", exc)).splitlines()[0][:200]
            raise BackupRefused(f"{where} has a row the table refuses: {said}") from None
        batch.clear()


def load(
    stream: IO[bytes],
    manifest: ExportManifest,
    limits: Limits,
    sets: Sequence[MigrationSet],
    scratch: Path,
    workspace_id: str,
) -> Path:
    """Read the archive again into ``scratch``: the rows into ``scratch/rows.db`` (migrated to this version's
    head; returned), the files under ``scratch/files/<workspace_id>/``."""
    rows_db = scratch / "rows.db"
    migrate_to(rows_db, sets, manifest.schema)
    (scratch / "files").mkdir(mode=0o700)
    files_fd = os.open(scratch / "files", DIR_FLAGS)
    engine = sa.create_engine(f"sqlite:///{rows_db}", poolclass=sa.pool.NullPool)
    try:
        with engine.begin() as conn:
            loader = _Loader(conn, workspace_id, files_fd, limits)
            try:
                again = scan_as(stream, ExportManifest.from_json, loader)
            finally:
                loader.unpack.close()
            if again != manifest:
                raise BackupRefused("the export changed while it was being read")
            loader.unpack.finish()
            dangling = conn.exec_driver_sql("PRAGMA foreign_key_check").first()
            if dangling is not None:
                raise BackupRefused(
                    f"the export's table {dangling[0]!r} has a row naming a {dangling[2]} that is not in the export"
                )
    finally:
        engine.dispose()
        os.close(files_fd)
    try:
        apply_migrations(rows_db, sets)
    except Exception as exc:
        raise BackupRefused(f"the export's records cannot be brought to this version: {exc}") from None
    return rows_db


@dataclass
class Rewrite:
    """How the imported rows change on their way into the new workspace.

    People: the person who exported becomes the importer; everyone else the rows name becomes a person of their
    own who is no one on this server (a new id per person, so who said what stays apparent, but the rows grant
    and impersonate no one here). Trust the exporting server gave (a repository registered by its owner, a model
    endpoint its owner set) is not carried: it is that server's owner's word, not this one's. Work in flight is
    stopped (an import starts nothing by itself): running agent runs end interrupted, pipeline runs that were
    running or waiting are cancelled, and triggers are switched off. Worktrees' folders are this workspace's."""

    exporter: str
    importer: str
    workspace_dir: Path
    old_workspace_id: str
    people: dict[str, str] = field(default_factory=dict)

    def person(self, user_id: str) -> str:
        if user_id == self.exporter:
            return self.importer
        return self.people.setdefault(user_id, new_id())

    def label(self, value: Any) -> Any:
        if isinstance(value, str) and value.startswith("user:"):
            return f"user:{self.person(value[5:])}"
        return value

    def row(self, table: str, row: dict[str, Any]) -> dict[str, Any]:
        for column in _LABELS.get(table, ()):
            row[column] = self.label(row.get(column))
        if table == "messages" and row.get("author_kind") == "user" and isinstance(row.get("author_id"), str):
            row["author_id"] = self.person(row["author_id"])
        elif table == "repos":
            row["registered_by_owner"] = False
        elif table == "agents":
            row["endpoint_by_owner"] = False
        elif table == "agent_runs" and row.get("status") == "running":
            row.update(status="finished", outcome="interrupted", error="stopped by the workspace's import")
        elif row.get("status") in _STOPPED.get(table, ()):
            row["status"] = "cancelled"
        elif table == "pipeline_triggers":
            row["enabled"] = False
        elif table == "worktrees":
            row["path"] = self.worktree_path(str(row.get("path")))
        return row

    def worktree_path(self, path: str) -> str:
        """A worktree's folder in this workspace: the part of the recorded path below the exporting workspace's
        folder, which must be in its spaces or worktrees, beneath this one's."""
        marker = f"/{self.old_workspace_id}/"
        _, found, rest = path.partition(marker)
        parts = tuple(rest.split("/")) if found else ()
        if not parts or parts[0] not in ("spaces", "worktrees") or any(p in ("", ".", "..") for p in parts):
            raise BackupRefused(f"the export's worktree at {path[:200]!r} is not in its workspace's folders")
        return str(self.workspace_dir.joinpath(*parts))


# Work in flight an import stops: the statuses of runs and steps that become ``cancelled``.
_STOPPED: dict[str, tuple[str, ...]] = {
    "pipeline_runs": ("running", "suspended"),
    "pipeline_step_runs": ("pending", "running", "suspended"),
}
# Columns holding a principal's label (``user:<id>`` or ``agent:<id>``).
_LABELS: dict[str, tuple[str, ...]] = {
    "spaces": ("created_by",),
    "tickets": ("reporter",),
    "agent_runs": ("dispatched_by",),
    "pipeline_runs": ("created_by",),
    "pipeline_templates": ("created_by",),
    "pipeline_triggers": ("created_by",),
    "workspace_settings": ("updated_by",),
}


def loaded_tables(sets: Sequence[MigrationSet]) -> list[sa.Table]:
    """The tables an import writes, parents before children."""
    tables: dict[str, sa.Table] = {}
    for mset in sets:
        for metadata in mset.tables:
            for table in metadata.tables.values():
                if table.name not in LEFT_OUT and table.name not in NOT_LOADED:
                    tables.setdefault(table.name, table)
    ordered = sa.MetaData()
    for table in tables.values():
        table.to_metadata(ordered)
    return [t for t in ordered.sorted_tables if t.name in tables]


def _stored(conn: WriteConnection, column: sa.Column[Any], value: Any) -> Any:
    if value is None:
        return None
    if isinstance(column.type, sa.DateTime) or isinstance(getattr(column.type, "impl", None), sa.DateTime):
        return conn.dt(value)
    if isinstance(column.type, sa.JSON):
        return conn.js(value)
    if isinstance(column.type, sa.Boolean):
        return bool(value)
    return value


def seeder(rows_db: Path, sets: Sequence[MigrationSet], rewrite: Rewrite) -> Callable[[WriteConnection], None]:
    """The seed that writes the rows of ``rows_db`` (at this version's head) into the new workspace's database."""
    tables = loaded_tables(sets)

    @transaction
    def seed(conn: WriteConnection) -> None:
        engine = sa.create_engine(f"sqlite:///{rows_db}", poolclass=sa.pool.NullPool)
        try:
            with engine.connect() as source:
                for table in tables:
                    names = [c.name for c in table.columns]
                    quoted = ", ".join(f'"{n}"' for n in names)
                    sql = f'INSERT INTO "{table.name}" ({quoted}) VALUES ({", ".join("?" for _ in names)})'
                    batch: list[list[Any]] = []
                    for found in source.execute(sa.select(table)).mappings():
                        row = rewrite.row(table.name, dict(found))
                        batch.append([_stored(conn, c, row.get(c.name)) for c in table.columns])
                        if len(batch) >= _BATCH:
                            conn.executemany(sql, batch)
                            batch.clear()
                    if batch:
                        conn.executemany(sql, batch)
        finally:
            engine.dispose()

    return seed
