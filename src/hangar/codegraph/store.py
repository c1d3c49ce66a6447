"""The code graph in the workspace's database: what one index run writes (``replace``: the changed files' rows
swapped in whole files, in batches of short write transactions) and what the ops read. Every read goes to the
database (another process may have reindexed meanwhile)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from hangar.codegraph.tables import code_edges, code_files, code_index, code_symbols
from hangar.core.db import write_transaction

_CHUNK = 2000  # rows per insert statement
BATCH_ROWS = 20_000  # rows per write transaction (see ``replace``)


@dataclass(frozen=True)
class IndexState:
    repo_id: str
    commit_id: str
    indexed_at: datetime
    files: int
    symbols: int
    edges: int
    lines: int


@dataclass
class FileGraph:
    """One file's rows as an index run found them."""

    path: str
    blob_id: str
    language: str | None
    lines: int = 0
    note: str | None = None
    symbols: list[Mapping[str, Any]] = field(default_factory=list)
    edges: list[Mapping[str, Any]] = field(default_factory=list)


async def index_state(engine: AsyncEngine, repo_id: str) -> IndexState | None:
    async with engine.connect() as conn:
        row = (await conn.execute(sa.select(code_index).where(code_index.c.repo_id == repo_id))).first()
    return None if row is None else IndexState(**row._mapping)


async def all_states(engine: AsyncEngine) -> list[IndexState]:
    async with engine.connect() as conn:
        rows = (await conn.execute(sa.select(code_index))).all()
    return [IndexState(**row._mapping) for row in rows]


async def file_blobs(engine: AsyncEngine, repo_id: str) -> dict[str, str | None]:
    """The files of the graph and their blob ids; None for a file skipped with a note (tried again next time)."""
    c = code_files.c
    async with engine.connect() as conn:
        rows = await conn.execute(sa.select(c.path, c.blob_id, c.note).where(_repo(code_files, repo_id)))
    return {r.path: (r.blob_id if r.note is None else None) for r in rows}


def _repo(table: sa.Table, repo_id: str) -> sa.ColumnElement[bool]:
    return table.c.repo_id == repo_id


async def _insert(conn: AsyncConnection, table: sa.Table, rows: Sequence[Mapping[str, Any]]) -> None:
    for i in range(0, len(rows), _CHUNK):
        await conn.execute(sa.insert(table), list(rows[i : i + _CHUNK]))


async def replace(
    engine: AsyncEngine,
    repo_id: str,
    commit_id: str,
    at: datetime,
    changed: Iterable[FileGraph],
    removed: Iterable[str],
) -> IndexState:
    """Swap in the rows of ``changed`` files, drop those of ``removed`` ones, then record the commit.

    The files go in batches of about ``BATCH_ROWS`` rows, each batch one write transaction holding whole files
    (a file's rows and its blob id change together): one transaction for a whole repository would hold the
    workspace's write lock for as long as it takes to write a million rows, and every other writer of the
    workspace (the pipelines' scheduler among them) would wait that long. So a search made while a large index is
    being written may see some files new and others old; ``code_index`` names the new commit only once all are in.
    A run stopped half way leaves each file either old or new with its blob id, so the next run parses only the
    files still old."""
    batch: list[FileGraph] = []
    rows = 0
    for f in changed:
        batch.append(f)
        rows += 1 + len(f.symbols) + len(f.edges)
        if rows >= BATCH_ROWS:
            await _swap(engine, repo_id, batch, [])
            batch, rows = [], 0
    await _swap(engine, repo_id, batch, sorted(set(removed)))
    async with write_transaction(engine) as conn:
        counts = {
            name: (await conn.execute(sa.select(sa.func.count()).select_from(t).where(_repo(t, repo_id)))).scalar_one()
            for name, t in (("files", code_files), ("symbols", code_symbols), ("edges", code_edges))
        }
        lines = (
            await conn.execute(
                sa.select(sa.func.coalesce(sa.func.sum(code_files.c.lines), 0)).where(_repo(code_files, repo_id))
            )
        ).scalar_one()
        state = IndexState(repo_id, commit_id, at, counts["files"], counts["symbols"], counts["edges"], int(lines))
        await conn.execute(sa.delete(code_index).where(code_index.c.repo_id == repo_id))
        await conn.execute(sa.insert(code_index).values(**state.__dict__))
    return state


async def _swap(engine: AsyncEngine, repo_id: str, changed: list[FileGraph], removed: list[str]) -> None:
    gone = sorted({*removed, *(f.path for f in changed)})
    if not gone:
        return
    symbols = [
        {
            "repo_id": repo_id,
            "path": f.path,
            "name": s["name"],
            "folded": s["name"].lower(),
            "kind": s["kind"],
            "container": s["container"],
            "start_line": s["startLine"],
            "start_col": s["startCol"],
            "end_line": s["endLine"],
            "end_col": s["endCol"],
        }
        for f in changed
        for s in f.symbols
    ]
    edges = [
        {"repo_id": repo_id, "path": f.path, "kind": e["kind"], "source": e["source"], "target": e["target"],
         "line": e["line"]}
        for f in changed
        for e in f.edges
    ]  # fmt: skip
    files = [
        {"repo_id": repo_id, "path": f.path, "blob_id": f.blob_id, "language": f.language, "lines": f.lines,
         "note": f.note}
        for f in changed
    ]  # fmt: skip
    async with write_transaction(engine) as conn:
        for table in (code_symbols, code_edges, code_files):
            for i in range(0, len(gone), _CHUNK):
                await conn.execute(
                    sa.delete(table).where(_repo(table, repo_id), table.c.path.in_(gone[i : i + _CHUNK]))
                )
        await _insert(conn, code_files, files)
        await _insert(conn, code_symbols, symbols)
        await _insert(conn, code_edges, edges)


async def forget(engine: AsyncEngine, repo_id: str) -> None:
    """Drop a repo's graph (the repo was removed)."""
    async with write_transaction(engine) as conn:
        for table in (code_symbols, code_edges, code_files, code_index):
            await conn.execute(sa.delete(table).where(_repo(table, repo_id)))
