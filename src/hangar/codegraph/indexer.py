"""One index run over a repo's commit: list the commit's tree from the server's clone, keep the files whose blob
changed since the graph's last run (a first run: all), read each from the clone and have a confined worker parse
it, then swap the changed files' rows in (``hangar.codegraph.store.replace``: whole files, in short transactions).

Hostile content is bounded before it is read: a file larger than ``max_file_bytes`` is skipped with a note (its
bytes are never read), a file whose first bytes hold a NUL is binary and skipped with a note, a symlink is noted
and never followed (the clone holds only its text), a parse past ``timeout_s`` is noted. Notes are rows of
``code_files``, so the run's report and ``code.status`` see them; a skipped file is tried again by every run
(the limits may have changed). A grammar that fails to resolve stops the run with ``GrammarFailed`` and nothing
is written.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.codegraph import store
from hangar.codegraph.languages import LANGUAGES, language_of
from hangar.codegraph.pool import ParserPool
from hangar.codegraph.store import FileGraph, IndexState
from hangar.workspace import TreeEntry, blob_reader, list_tree

BINARY_SNIFF = 8000  # bytes looked at for a NUL (git's own rule for "binary")
PROGRESS_EVERY_S = 0.5

Progress = Callable[[Mapping[str, Any]], Awaitable[None]]


@dataclass(frozen=True)
class IndexLimits:
    max_file_bytes: int = 1 << 20
    timeout_s: float = 10.0
    workers: int = 2


@dataclass
class IndexReport:
    commit_id: str
    previous_commit_id: str | None
    dry_run: bool
    to_parse: int = 0
    unchanged: int = 0
    removed: int = 0
    parsed: int = 0
    lines: int = 0
    symbols: int = 0
    edges: int = 0
    skipped: list[dict[str, str]] = field(default_factory=list)  # {path, note}
    state: IndexState | None = None

    def to_state(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "commitId": self.commit_id,
            "previousCommitId": self.previous_commit_id,
            "dryRun": self.dry_run,
            "filesToParse": self.to_parse,
            "filesUnchanged": self.unchanged,
            "filesRemoved": self.removed,
            "filesParsed": self.parsed,
            "linesParsed": self.lines,
            "symbolsFound": self.symbols,
            "edgesFound": self.edges,
            "skipped": self.skipped[:100],
            "skippedCount": len(self.skipped),
        }
        if self.state is not None:
            out |= {"totalFiles": self.state.files, "totalSymbols": self.state.symbols, "totalEdges": self.state.edges}
        return out


def _noted(entry: TreeEntry, language: str | None, note: str) -> FileGraph:
    return FileGraph(entry.path, entry.oid, language, note=note)


async def index_commit(
    engine: AsyncEngine,
    git_dir: Path,
    repo_id: str,
    commit_id: str,
    pool: ParserPool,
    *,
    limits: IndexLimits,
    now: Callable[[], datetime],
    progress: Progress,
    dry_run: bool = False,
) -> IndexReport:
    previous = await store.index_state(engine, repo_id)
    report = IndexReport(commit_id, previous.commit_id if previous else None, dry_run)
    entries = [e for e in await list_tree(git_dir, commit_id) if language_of(e.path) is not None]
    known = await store.file_blobs(engine, repo_id)
    present = {e.path for e in entries}
    removed = [p for p in known if p not in present]
    todo = [e for e in entries if known.get(e.path) != e.oid]
    report.to_parse, report.unchanged, report.removed = len(todo), len(entries) - len(todo), len(removed)
    await progress({"phase": "planned", "files": 0, "of": len(todo), "removed": len(removed)})
    if dry_run:
        return report
    graphs: list[FileGraph] = []
    last = [0.0]

    async def tell(force: bool = False) -> None:
        if force or time.monotonic() - last[0] >= PROGRESS_EVERY_S:
            last[0] = time.monotonic()
            await progress(
                {"phase": "parsing", "files": len(graphs), "of": len(todo), "symbols": report.symbols,
                 "edges": report.edges, "lines": report.lines}
            )  # fmt: skip

    queue: asyncio.Queue[TreeEntry] = asyncio.Queue()
    for e in todo:
        queue.put_nowait(e)
    async with blob_reader(git_dir) as blobs:
        read_lock = asyncio.Lock()  # one cat-file answers one request at a time

        async def one(entry: TreeEntry) -> FileGraph:
            language = language_of(entry.path)
            assert language is not None
            if entry.kind != "file":
                return _noted(entry, language, f"{entry.kind}: not followed")
            if entry.size > limits.max_file_bytes:
                return _noted(entry, language, f"too large: {entry.size} bytes (the limit is {limits.max_file_bytes})")
            async with read_lock:
                data = await blobs.read(entry.oid, limits.max_file_bytes)
            if b"\0" in data[:BINARY_SNIFF]:
                return _noted(entry, language, "binary: not parsed")
            spec = LANGUAGES[language]
            answer = await pool.parse(language, spec.grammar, spec.query, data, limits.timeout_s)
            if "error" in answer:
                return _noted(entry, language, f"{answer['error']}: {answer.get('message', '')}"[:500])
            return FileGraph(
                entry.path, entry.oid, language, int(answer["lines"]), None, answer["symbols"], answer["edges"]
            )

        async def drain() -> None:
            while not queue.empty():
                graph = await one(queue.get_nowait())
                graphs.append(graph)
                if graph.note is None:
                    report.parsed += 1
                    report.lines += graph.lines
                    report.symbols += len(graph.symbols)
                    report.edges += len(graph.edges)
                else:
                    report.skipped.append({"path": graph.path, "note": graph.note})
                await tell()

        tasks = [asyncio.create_task(drain()) for _ in range(max(1, limits.workers))]
        try:
            await asyncio.gather(*tasks)
        except BaseException:  # a grammar failed (or the step was cancelled): stop the other drains too
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
    await tell(force=True)
    report.state = await store.replace(engine, repo_id, commit_id, now(), graphs, removed)
    return report
