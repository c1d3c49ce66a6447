"""Reading the code graph: symbol search (ranked; prefix and fuzzy), definitions, references, callers, callees and
a file's outline. Every call reads the database afresh.

Search takes the symbols whose name starts with the query (case folded, by index; the first ``FUZZY_CANDIDATES``
in the index's order) and, unless those already fill the answer, those whose name contains it (the names the
trigram index offers, ``hangar.codegraph.trigrams``, each checked), and then, unless the answer is full, those whose
name starts with its first letter and holds the rest in order (a fuzzy match, ``gtr`` for ``get_reader``, read by
the (repo, folded) index and matched in the database). It ranks them: an exact name first (the same case before
another case), then a prefix, a substring, and a scattered match last, the fewer gaps and the shorter the name the
higher; a definition of a type or function outranks a variable on a tie.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.codegraph import trigrams
from hangar.codegraph.tables import code_edges, code_symbols

FUZZY_CANDIDATES = 2000  # matches of each kind ranked at most; prefix matches come first by index
MAX_QUERY = 200
_STRONG_KINDS = frozenset({"class", "function", "method", "struct", "interface", "trait", "enum", "type"})


@dataclass(frozen=True)
class Symbol:
    repo_id: str
    path: str
    name: str
    kind: str
    container: str
    start_line: int
    start_col: int
    end_line: int
    end_col: int
    score: float = 0.0


@dataclass(frozen=True)
class Edge:
    repo_id: str
    path: str
    kind: str
    source: str
    target: str
    line: int


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _symbol(row: Any, score: float = 0.0) -> Symbol:
    m = row._mapping
    return Symbol(
        m["repo_id"], m["path"], m["name"], m["kind"], m["container"], m["start_line"], m["start_col"],
        m["end_line"], m["end_col"], score,
    )  # fmt: skip


def _columns() -> list[sa.Column[Any]]:
    c = code_symbols.c
    return [c.repo_id, c.path, c.name, c.kind, c.container, c.start_line, c.start_col, c.end_line, c.end_col]


def rank(query: str, name: str, kind: str) -> float:
    """How well ``name`` answers ``query`` (0: not at all)."""
    q, n = query.lower(), name.lower()
    if n == q:
        score = 1000.0 + (50 if name == query else 0)
    elif n.startswith(q):
        score = 800.0 - min(len(n) - len(q), 200)
    elif (at := n.find(q)) >= 0:
        score = 500.0 - min(at, 100) - min(len(n) - len(q), 100) / 2
    else:
        gaps, pos = 0, -1
        for ch in q:
            nxt = n.find(ch, pos + 1)
            if nxt < 0:
                return 0.0
            gaps += nxt - pos - 1 if pos >= 0 else 0
            pos = nxt
        score = 300.0 - min(gaps, 150) - min(len(n), 100) / 4
    return score + (5 if kind in _STRONG_KINDS else 0)


async def search(
    engine: AsyncEngine, query: str, repo_ids: Sequence[str], limit: int, kinds: Sequence[str] = ()
) -> list[Symbol]:
    q = query.lower()
    c = code_symbols.c
    of_kinds = sa.select(*_columns()).where(c.kind.in_(list(kinds)) if kinds else sa.true())
    base = of_kinds.where(c.repo_id.in_(list(repo_ids)))
    # Prefix: a range on the folded name, which the (repo, folded) index answers on SQLite and PostgreSQL alike.
    prefix = base.where(c.folded >= q, c.folded < q + "\U0010ffff")
    # Substrings: the names the trigram index offers, each checked by the query's own LIKE (``trigrams``).
    narrowed = trigrams.candidates(engine.dialect.name, q, list(repo_ids))
    inside = (base if narrowed is None else of_kinds.where(narrowed)).where(
        c.folded.like("%" + _escape(q) + "%", escape="\\")
    )
    # Scattered letters: the names starting with the first letter, by index, whose letters hold the rest in order.
    # ``LIKE 'g%t%r%'``: the first letter fixed, so only that letter's range of the index is read (``'%g%t%r%'``
    # would read every name), and matched in the database rather than each name carried into Python.
    scattered = base.where(
        c.folded >= q[0], c.folded < q[0] + "\U0010ffff", c.folded.like(_in_order_pattern(q), escape="\\")
    )
    found: dict[tuple[str, str, str, int, int], Symbol] = {}
    async with engine.connect() as conn:
        for stmt in (prefix, inside, scattered):
            for row in await conn.execute(stmt.limit(FUZZY_CANDIDATES)):
                s = _symbol(row)
                found.setdefault((s.repo_id, s.path, s.name, s.start_line, s.start_col), s)
            # Every prefix match outranks every substring match, and every substring match every scattered one
            # (``rank``): once the answer is full, the later kinds could add nothing shown.
            if len(found) >= limit:
                break
    ranked = [Symbol(**{**s.__dict__, "score": rank(query, s.name, s.kind)}) for s in found.values()]
    ranked.sort(key=lambda s: (-s.score, len(s.name), s.path, s.start_line))
    return [s for s in ranked if s.score > 0][:limit]


def _in_order_pattern(q: str) -> str:
    """``gtr`` → ``g%t%r%``: names starting with the first letter and holding the others in order."""
    return "%".join(_escape(ch) for ch in q) + "%"


def split_qualified(name: str) -> tuple[str, str | None]:
    """``Parser.parse`` → (``parse``, ``Parser``); ``parse`` → (``parse``, None)."""
    container, dot, last = name.rpartition(".")
    return (last, container) if dot and last else (name, None)


async def definitions(
    engine: AsyncEngine, name: str, repo_ids: Sequence[str], path: str | None, limit: int
) -> list[Symbol]:
    last, container = split_qualified(name)
    c = code_symbols.c
    stmt = sa.select(*_columns()).where(c.repo_id.in_(list(repo_ids)), c.folded == last.lower(), c.name == last)
    if container is not None:
        stmt = stmt.where(sa.or_(c.container == container, c.container.like("%." + _escape(container), escape="\\")))
    async with engine.connect() as conn:
        rows = [_symbol(r) for r in await conn.execute(stmt.limit(1000))]
    # The file asked from first, then types and functions before variables.
    rows.sort(key=lambda s: (s.path != path, s.kind not in _STRONG_KINDS, s.path, s.start_line))
    return rows[:limit]


async def edges_to(
    engine: AsyncEngine, name: str, repo_ids: Sequence[str], kinds: Sequence[str], limit: int
) -> list[Edge]:
    """Edges of ``kinds`` whose target is ``name``, or its last component (a call's target is a plain name; an
    import's is the module as written, ``hangar.codegraph`` or ``./render``)."""
    last, _container = split_qualified(name)
    e = code_edges.c
    stmt = (
        sa.select(e.repo_id, e.path, e.kind, e.source, e.target, e.line)
        .where(e.repo_id.in_(list(repo_ids)), e.target.in_(sorted({name, last})), e.kind.in_(list(kinds)))
        .order_by(e.path, e.line)
        .limit(limit)
    )
    async with engine.connect() as conn:
        return [Edge(*r) for r in await conn.execute(stmt)]


async def edges_from(
    engine: AsyncEngine, name: str, repo_ids: Sequence[str], kinds: Sequence[str], limit: int
) -> list[Edge]:
    """Edges of ``kinds`` from the symbol ``name`` (qualified, ``Parser.parse``, or plain: any container)."""
    e = code_edges.c
    where = (
        e.source == name if "." in name else sa.or_(e.source == name, e.source.like("%." + _escape(name), escape="\\"))
    )
    stmt = (
        sa.select(e.repo_id, e.path, e.kind, e.source, e.target, e.line)
        .where(e.repo_id.in_(list(repo_ids)), e.kind.in_(list(kinds)), where)
        .order_by(e.path, e.line)
        .limit(limit)
    )
    async with engine.connect() as conn:
        return [Edge(*r) for r in await conn.execute(stmt)]


async def outline(engine: AsyncEngine, repo_id: str, path: str) -> list[Symbol]:
    c = code_symbols.c
    stmt = sa.select(*_columns()).where(c.repo_id == repo_id, c.path == path).order_by(c.start_line, c.start_col)
    async with engine.connect() as conn:
        return [_symbol(r) for r in await conn.execute(stmt)]
