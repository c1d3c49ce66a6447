"""``code.search`` with the trigram index answers exactly what the scan of every name answered: a generated graph
(names of words in snake and camel case, short names, non-ASCII, wildcard characters, several kinds, two repos) is
searched with many queries (exact names, prefixes, substrings, scattered letters, short and absent ones, with kinds
and limits), each compared with the search as it was (``tests/support/codegraph_scan.py``), on SQLite and
PostgreSQL. The index follows the graph: the rows of a reindexed file are found again, a removed symbol is no
longer found (on the store and through a real ``code.index`` run over RPC), and a graph written before the index
existed is indexed by the migration."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.codegraph import queries, store, trigrams
from hangar.codegraph.queries import Symbol
from hangar.codegraph.store import FileGraph
from hangar.codegraph.tables import MIGRATIONS
from hangar.core.context import AppContext
from hangar.core.migrating import apply_migrations, migrate_to
from tests.integration.test_code_graph import commit_tree, index, new_repo, refresh, register, report
from tests.support.codegraph_scan import scan_search
from tests.support.dialects import DIALECTS, app_for
from tests.unit.agents.support import workspace_server

WORDS = (  # noqa: SIM905 - a paragraph of words reads better than 39 quoted ones
    "get set read write parse index store user repo file tree node edge graph query rank search find load save "
    "open close start stop token cache limit frame event agent worker client server stream buffer commit merge "
    "größe naïve"
).split()
ODD = ["x", "i", "id", "ok", "_", "__init__", "a%b", "a_b", "rate%", "back\\slash", "Ω", "ßig", "X1", "x_y_z"]
KINDS = ("function", "class", "variable", "method")
AT = datetime(2026, 1, 1, tzinfo=UTC)


def a_name(rng: random.Random) -> str:
    parts = rng.sample(WORDS, rng.randint(1, 3))
    style = rng.random()
    if style < 0.4:
        return "_".join(parts)
    if style < 0.8:
        return parts[0] + "".join(p.title() for p in parts[1:])
    return "".join(p.upper() for p in parts) + str(rng.randint(0, 9))


def corpus(rng: random.Random, repo: str, files: int, per_file: int) -> list[FileGraph]:
    """Files of a repo, each symbol on its own line (so the ranking's order is total)."""
    graphs = []
    for f in range(files):
        rows = []
        for i in range(per_file):
            name = rng.choice(ODD) if rng.random() < 0.08 else a_name(rng)
            rows.append(symbol(name, rng.choice(KINDS), i + 1))
        graphs.append(FileGraph(f"{repo}/m{f}.py", f"{f:040x}", "python", per_file, None, rows, []))
    return graphs


def symbol(name: str, kind: str, line: int) -> dict[str, Any]:
    return {"name": name, "kind": kind, "container": "", "startLine": line, "startCol": 0, "endLine": line,
            "endCol": 1}  # fmt: skip


def a_query(rng: random.Random, names: list[str]) -> str:
    name = rng.choice(names)
    shape = rng.randrange(7)
    if shape == 0:
        return name  # exact
    if shape == 1:
        return name[: rng.randint(1, len(name))]  # prefix
    if shape == 2:
        at = rng.randrange(len(name))
        return name[at : at + rng.randint(1, 8)]  # substring
    if shape == 3:
        letters = [ch for ch in name.lower() if ch.isalnum()] or ["a"]
        return "".join(letters[:: rng.randint(1, 3)])[: rng.randint(2, 6)]  # scattered letters
    if shape == 4:
        return name.upper() if rng.random() < 0.5 else name.swapcase()
    if shape == 5:
        return "".join(rng.choice("abcdeghklmnoprstuz_%") for _ in range(rng.randint(1, 6)))  # mostly absent
    return rng.choice(["qzx", "%", "_", "a%", "%_%", "\\", "zzzz", "ößi", "Ω", "id", "x"])


def shown(found: list[Symbol]) -> list[tuple[Any, ...]]:
    return [(s.repo_id, s.path, s.name, s.kind, s.start_line, s.score) for s in found]


@pytest.fixture(params=DIALECTS)
async def app(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[AppContext]:
    async with app_for(request, tmp_path) as ctx:
        yield ctx


async def test_search_with_the_trigram_index_answers_what_the_scan_answered(app: AppContext) -> None:
    engine = await app.dbs.workspace("w1", create=True)
    rng = random.Random(29)
    # Under every per-kind candidate cap (``FUZZY_CANDIDATES``), where the scan's answer is the exact one.
    await store.replace(engine, "r1", "c1", AT, corpus(rng, "one", 12, 60), [])
    await store.replace(engine, "r2", "c2", AT, corpus(rng, "two", 8, 50), [])
    names = await _names(engine)
    assert len(names) == 12 * 60 + 8 * 50
    compared = 0
    for _ in range(600):
        query = a_query(rng, names)[: queries.MAX_QUERY]
        repos = rng.choice([["r1"], ["r2"], ["r1", "r2"]])
        kinds = rng.choice([(), ("function",), ("class", "method")])
        limit = rng.choice([1, 5, 20, 50, 500])
        got = await queries.search(engine, query, repos, limit, kinds)
        assert shown(got) == shown(await scan_search(engine, query, repos, limit, kinds)), (query, repos, kinds)
        compared += bool(got)
    assert compared > 300  # most queries found something to compare
    # Names shorter than three characters (no trigram) are found as before.
    for short in ("x", "id", "i", "_"):
        got = await queries.search(engine, short, ["r1", "r2"], 500)
        assert short in {s.name for s in got}
        assert shown(got) == shown(await scan_search(engine, short, ["r1", "r2"], 500))


async def test_the_trigram_index_follows_reindexed_and_removed_symbols(app: AppContext) -> None:
    engine = await app.dbs.workspace("w1", create=True)

    def graph(path: str, blob: str, *names: str) -> FileGraph:
        return FileGraph(path, blob, "python", 10, None, [symbol(n, "function", i + 1) for i, n in enumerate(names)])

    async def found(query: str) -> set[str]:
        return {s.name for s in await queries.search(engine, query, ["r1"], 50)}

    await store.replace(engine, "r1", "c1", AT, [graph("a.py", "1", "load_quartz_frame", "keep_me")], [])
    assert await found("quartz") == {"load_quartz_frame"}  # a substring, not a prefix: the trigram path
    # The file reindexed: the old name gone, a new one in.
    await store.replace(engine, "r1", "c2", AT, [graph("a.py", "2", "save_jasper_frame", "keep_me")], [])
    assert await found("quartz") == set()
    assert await found("jasper") == {"save_jasper_frame"}
    # The file removed: nothing of it is found.
    await store.replace(engine, "r1", "c3", AT, [], ["a.py"])
    assert await found("jasper") == set() and await found("keep") == set()
    # A removed repo's rows go too.
    await store.replace(engine, "r1", "c4", AT, [graph("b.py", "3", "fetch_onyx_batch")], [])
    assert await found("onyx") == {"fetch_onyx_batch"}
    await store.forget(engine, "r1")
    assert await found("onyx") == set()
    if engine.dialect.name == "sqlite":  # FTS5's own check of an external-content index against its table
        async with engine.begin() as conn:
            await conn.exec_driver_sql(
                f"INSERT INTO {trigrams.FTS_TABLE}({trigrams.FTS_TABLE}, rank) VALUES ('integrity-check', 1)"
            )


async def test_substrings_are_found_through_the_index(app: AppContext) -> None:
    """The search reads the index, not every name: on SQLite a substring is found only while the index holds it
    (emptied, the scan still finds it and the search does not); on PostgreSQL the planner can answer the LIKE
    from the GIN index."""
    engine = await app.dbs.workspace("w1", create=True)
    rows = [symbol("load_quartz_frame", "function", 1), symbol("other", "function", 2)]
    await store.replace(engine, "r1", "c1", AT, [FileGraph("a.py", "1", "python", 2, None, rows, [])], [])
    assert [s.name for s in await queries.search(engine, "quartz", ["r1"], 10)] == ["load_quartz_frame"]
    if engine.dialect.name == "sqlite":
        async with engine.begin() as conn:
            await conn.exec_driver_sql(f"INSERT INTO {trigrams.FTS_TABLE}({trigrams.FTS_TABLE}) VALUES ('delete-all')")
        assert await queries.search(engine, "quartz", ["r1"], 10) == []
        assert [s.name for s in await scan_search(engine, "quartz", ["r1"], 10)] == ["load_quartz_frame"]
        # Prefixes and short queries never needed it.
        assert [s.name for s in await queries.search(engine, "load", ["r1"], 10)] == ["load_quartz_frame"]
        assert [s.name for s in await queries.search(engine, "ua", ["r1"], 10)] == ["load_quartz_frame"]
    else:
        async with engine.begin() as conn:
            await conn.exec_driver_sql("SET LOCAL enable_seqscan = off")
            plan = "\n".join(
                r[0]
                for r in await conn.execute(
                    sa.text("EXPLAIN SELECT id FROM code_symbols WHERE folded LIKE :p"),
                    {"p": "%quartz%"},
                )
            )
        assert trigrams.PG_INDEX in plan, plan


async def test_a_graph_written_before_the_index_is_indexed_by_the_migration(tmp_path: Path) -> None:
    db = tmp_path / "ws.db"
    migrate_to(db, [MIGRATIONS], {"codegraph": "x0001"})
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT name FROM sqlite_master WHERE name = ?", (trigrams.FTS_TABLE,)).fetchone() is None
        conn.executemany(
            "INSERT INTO code_symbols (repo_id, path, name, folded, kind, container, start_line, start_col, "
            "end_line, end_col) VALUES ('r1', 'a.py', ?, ?, 'function', '', 1, 0, 1, 1)",
            [(n, n.lower()) for n in ("parseAmberToken", "write_amber", "other")],
        )
    apply_migrations(db, [MIGRATIONS])
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            f"SELECT s.name FROM {trigrams.FTS_TABLE} t JOIN code_symbols s ON s.id = t.rowid "
            "WHERE t.folded LIKE '%amber%' ORDER BY s.name"
        ).fetchall()
    assert rows == [("parseAmberToken",), ("write_amber",)]


async def test_a_symbol_removed_by_a_reindex_is_no_longer_found(tmp_path: Path) -> None:
    source = new_repo(tmp_path / "src", {"app/shapes.py": "def draw_quartz_spiral():\n    pass\n",
                                          "app/keep.py": "def keep_quartz():\n    pass\n"})  # fmt: skip
    async with workspace_server(tmp_path) as (srv, c, ws):
        repo_id, clone = await register(srv, c, ws, source)
        report(await index(c, ws, repo_id, clone))

        async def found(query: str) -> set[str]:
            got = await c.call("code.search", workspace_id=ws, query=query, repoId=repo_id)
            return {s["name"] for s in got["symbols"]}

        assert await found("quartz") == {"draw_quartz_spiral", "keep_quartz"}
        commit_tree(source, {"app/shapes.py": "def draw_opal_spiral():\n    pass\n"})
        await refresh(srv, ws, repo_id)
        report(await index(c, ws, repo_id, clone))
        assert await found("quartz") == {"keep_quartz"}
        assert await found("opal") == {"draw_opal_spiral"}
        (source / "app" / "keep.py").unlink()
        commit_tree(source, {}, "drop keep.py")
        await refresh(srv, ws, repo_id)
        report(await index(c, ws, repo_id, clone))
        assert await found("quartz") == set()
        assert await found("spiral") == {"draw_opal_spiral"}


async def _names(engine: AsyncEngine) -> list[str]:
    from hangar.codegraph.tables import code_symbols

    async with engine.connect() as conn:
        return [r[0] for r in await conn.execute(sa.select(code_symbols.c.name))]
