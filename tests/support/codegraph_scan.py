"""``code.search`` as it was before the trigram index (kept for comparison: the property test of
``tests/integration/test_code_search_trigrams.py`` and the baseline of ``bench/bench_code_graph.py``): prefixes by
the (repo, folded) index, substrings by ``LIKE '%q%'`` over every name, scattered letters by reading the names of
the query's first letter (at most ``FUZZY_SCAN``) and matching them in Python. Ranking is the search's own."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from hangar.codegraph.queries import FUZZY_CANDIDATES, Symbol, _columns, _escape, _symbol, rank
from hangar.codegraph.tables import code_symbols

FUZZY_SCAN = 200_000


async def scan_search(
    engine: AsyncEngine, query: str, repo_ids: Sequence[str], limit: int, kinds: Sequence[str] = ()
) -> list[Symbol]:
    q = query.lower()
    base = sa.select(*_columns()).where(code_symbols.c.repo_id.in_(list(repo_ids)))
    if kinds:
        base = base.where(code_symbols.c.kind.in_(list(kinds)))
    prefix = base.where(code_symbols.c.folded >= q, code_symbols.c.folded < q + "\U0010ffff").limit(FUZZY_CANDIDATES)
    inside = base.where(code_symbols.c.folded.like("%" + _escape(q) + "%", escape="\\")).limit(FUZZY_CANDIDATES)
    found: dict[tuple[str, str, str, int, int], Symbol] = {}
    async with engine.connect() as conn:
        for stmt in (prefix, inside):
            for row in await conn.execute(stmt):
                s = _symbol(row)
                found.setdefault((s.repo_id, s.path, s.name, s.start_line, s.start_col), s)
            if stmt is prefix and len(found) >= limit:
                break
        else:
            for s in await _scattered(conn, base, q):
                found.setdefault((s.repo_id, s.path, s.name, s.start_line, s.start_col), s)
    ranked = [Symbol(**{**s.__dict__, "score": rank(query, s.name, s.kind)}) for s in found.values()]
    ranked.sort(key=lambda s: (-s.score, len(s.name), s.path, s.start_line))
    return [s for s in ranked if s.score > 0][:limit]


async def _scattered(conn: AsyncConnection, base: sa.Select[Any], q: str) -> list[Symbol]:
    c = code_symbols.c
    letter = q[0]
    keys = base.with_only_columns(c.id, c.folded).where(c.folded >= letter, c.folded < letter + "\U0010ffff")
    matched: list[int] = []
    for row_id, folded in await conn.execute(keys.limit(FUZZY_SCAN)):
        if _in_order(q, folded):
            matched.append(row_id)
            if len(matched) >= FUZZY_CANDIDATES:
                break
    if not matched:
        return []
    rows = await conn.execute(sa.select(*_columns()).where(c.id.in_(matched)))
    return [_symbol(r) for r in rows]


def _in_order(q: str, name: str) -> bool:
    pos = 0
    for ch in q:
        pos = name.find(ch, pos) + 1
        if pos == 0:
            return False
    return True
