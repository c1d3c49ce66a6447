"""Full-text search over the site's pages: SQLite FTS5 in memory, porter stemming, bm25 with the title weighted.

Queries are reduced to words and each word is quoted, so FTS5 operators typed by a caller are searched as text
rather than parsed (no syntax errors reach the caller). All words must match; when nothing matches, any word may.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from dataclasses import dataclass

_WORD = re.compile(r"\w+", re.UNICODE)
# Column weights for bm25: title counts ten times, the description four times, the body once.
_WEIGHTS = (10.0, 4.0, 1.0)
MAX_QUERY_WORDS = 16


@dataclass(frozen=True)
class Hit:
    slug: str
    title: str
    description: str
    snippet: str
    score: float


@dataclass(frozen=True)
class Doc:
    slug: str
    title: str
    description: str
    body: str


class SearchIndex:
    def __init__(self, docs: list[Doc]) -> None:
        # One connection for the process; the lock makes it safe if a caller runs searches from threads.
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        self._lock = threading.Lock()
        self._db.execute(
            "CREATE VIRTUAL TABLE pages USING fts5(title, description, body, slug UNINDEXED,"
            " tokenize = 'porter unicode61')"
        )
        self._db.executemany(
            "INSERT INTO pages (title, description, body, slug) VALUES (?, ?, ?, ?)",
            [(d.title, d.description, d.body, d.slug) for d in docs],
        )
        self._db.commit()

    @staticmethod
    def words(query: str) -> list[str]:
        return _WORD.findall(query)[:MAX_QUERY_WORDS]

    def search(self, query: str, limit: int = 10) -> list[Hit]:
        words = self.words(query)
        if not words:
            return []
        quoted = ['"' + w.replace('"', '""') + '"' for w in words]
        for joiner in (" AND ", " OR "):
            hits = self._run(joiner.join(quoted), limit)
            if hits or len(words) == 1:
                return hits
        return []

    def _run(self, match: str, limit: int) -> list[Hit]:
        # Rank first without snippets (FTS5 would build a snippet for every match before sorting), then build
        # snippets for the rows kept.
        ranked = (
            f"SELECT rowid, bm25(pages, {_WEIGHTS[0]}, {_WEIGHTS[1]}, {_WEIGHTS[2]}) AS rank"
            " FROM pages WHERE pages MATCH ? ORDER BY rank LIMIT ?"
        )
        detail = (
            "SELECT slug, title, description, snippet(pages, 2, '**', '**', ' … ', 16)"
            " FROM pages WHERE pages MATCH ? AND rowid = ?"
        )
        hits = []
        with self._lock:
            for rowid, rank in self._db.execute(ranked, (match, limit)).fetchall():
                slug, title, description, snippet = self._db.execute(detail, (match, rowid)).fetchone()
                hits.append(Hit(slug=slug, title=title, description=description, snippet=snippet, score=-float(rank)))
        return hits
