"""Full-text search over the site's pages: SQLite FTS5 in memory, porter stemming, bm25 with the title weighted.

Queries are reduced to words and each word is quoted, so FTS5 operators typed by a caller are searched as text
rather than parsed (no syntax errors reach the caller). All words must match; when nothing matches, any word may.

FTS5 ranks; the snippets are made in Python (``hangar.site.snippets``) from each page's tokens and terms and the
query words' terms. FTS5's own tokenizer makes both, in a one-row table of the same tokenizer read through
``fts5vocab``: a page's body the first time the page is a hit (once for the index's life), a query word once
(the last ``STEMS_KEPT`` words kept). A page whose body this tokenization does not line up with gets FTS5's own
snippet. Kept, least recently used out first: the results of the last ``CACHE_ENTRIES`` distinct queries, and
``SNIPPETS_KEPT`` snippets, each by its page and the query terms that page holds (nothing else changes it). An
index is built once from a site build and never changes (a changed site is a new build with a new index), so
nothing kept outlives the content it came from.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections import OrderedDict
from dataclasses import dataclass

from hangar.site.snippets import ELLIPSIS, SNIPPET_TOKENS, TOKEN, Body, Phrase

_WORD = re.compile(r"\w+", re.UNICODE)
# Column weights for bm25: title counts ten times, the description four times, the body once.
_WEIGHTS = (10.0, 4.0, 1.0)
MAX_QUERY_WORDS = 16
CACHE_ENTRIES = 1024
STEMS_KEPT = 4096
SNIPPETS_KEPT = 4096
_TOKENIZER = "porter unicode61"
# Constant statements: sqlite3's statement cache prepares each once.
_RANKED = (
    f"SELECT rowid, bm25(pages, {_WEIGHTS[0]}, {_WEIGHTS[1]}, {_WEIGHTS[2]}) AS rank"
    " FROM pages WHERE pages MATCH ? ORDER BY rank LIMIT ?"
)
_FTS5_SNIPPET = (
    f"SELECT snippet(pages, 2, '**', '**', '{ELLIPSIS}', {SNIPPET_TOKENS}) FROM pages WHERE pages MATCH ? AND rowid = ?"
)


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
            f" tokenize = '{_TOKENIZER}')"
        )
        self._db.executemany(
            "INSERT INTO pages (rowid, title, description, body, slug) VALUES (?, ?, ?, ?, ?)",
            [(n, d.title, d.description, d.body, d.slug) for n, d in enumerate(docs, start=1)],
        )
        # A one-row table of the same tokenizer, and its terms by position: how a text's terms are learnt.
        self._db.execute(f"CREATE VIRTUAL TABLE stemmer USING fts5(word, tokenize = '{_TOKENIZER}')")
        self._db.execute("CREATE VIRTUAL TABLE stemmer_terms USING fts5vocab(stemmer, 'instance')")
        self._db.commit()
        self._pages = {n: (d.slug, d.title, d.description) for n, d in enumerate(docs, start=1)}
        self._texts = {n: d.body for n, d in enumerate(docs, start=1)}
        self._bodies: dict[int, Body | None] = {}  # each page's tokens, learnt the first time it is a hit
        self._kept: OrderedDict[tuple[tuple[str, ...], int], list[Hit]] = OrderedDict()
        self._stems: OrderedDict[str, Phrase] = OrderedDict()
        self._snippets: OrderedDict[tuple[int, tuple[Phrase, ...]], str] = OrderedDict()
        self._chars: dict[str, bool] = {}  # non-ASCII characters of the bodies: whether both tokenizers agree

    @staticmethod
    def words(query: str) -> list[str]:
        return _WORD.findall(query)[:MAX_QUERY_WORDS]

    def search(self, query: str, limit: int = 10) -> list[Hit]:
        words = self.words(query)
        if not words:
            return []
        key = (tuple(words), limit)
        with self._lock:
            hits = self._kept.get(key)
            if hits is not None:
                self._kept.move_to_end(key)
                return hits
            hits = self._search(words, limit)
            self._kept[key] = hits
            if len(self._kept) > CACHE_ENTRIES:
                self._kept.popitem(last=False)
        return hits

    def _search(self, words: list[str], limit: int) -> list[Hit]:
        quoted = ['"' + w.replace('"', '""') + '"' for w in words]
        for joiner in (" AND ", " OR "):
            ranked = self._db.execute(_RANKED, (joiner.join(quoted), limit)).fetchall()
            if ranked or len(words) == 1:
                break
        phrases = [self._stem(w) for w in words] if ranked else []
        hits = []
        for rowid, rank in ranked:
            slug, title, description = self._pages[rowid]
            body = self._body(rowid)
            if body is not None:
                snippet = self._snippet(rowid, body, phrases)
            else:
                snippet = self._db.execute(_FTS5_SNIPPET, (joiner.join(quoted), rowid)).fetchone()[0]
            hits.append(Hit(slug, title, description, snippet, -float(rank)))
        return hits

    def _snippet(self, rowid: int, body: Body, phrases: list[Phrase]) -> str:
        """A page's snippet depends only on the query phrases its body holds (in their order): kept by those."""
        key = (rowid, tuple(p for p in phrases if p and p[0] in body.where))
        snippet = self._snippets.get(key)
        if snippet is None:
            snippet = self._snippets[key] = body.snippet(phrases)
            if len(self._snippets) > SNIPPETS_KEPT:
                self._snippets.popitem(last=False)
        else:
            self._snippets.move_to_end(key)
        return snippet

    def _body(self, rowid: int) -> Body | None:
        if rowid not in self._bodies:
            text = self._texts[rowid]
            # unicode61 sorts characters by tables of its own: outside ASCII, each character the body holds must
            # be a token character or a separator for both, or the positions would not line up.
            if all(self._agrees(c) for c in set(text) if not c.isascii()):
                self._bodies[rowid] = Body.aligned(text, self._terms(text))
            else:
                self._bodies[rowid] = None
        return self._bodies[rowid]

    def _agrees(self, char: str) -> bool:
        verdict = self._chars.get(char)
        if verdict is None:
            probe = f"a{char}b"
            verdict = self._chars[char] = len(self._terms(probe)) == len(TOKEN.findall(probe))
        return verdict

    def _stem(self, word: str) -> Phrase:
        """The terms FTS5 makes of ``word`` (usually one; none for a word of separators only)."""
        phrase = self._stems.get(word)
        if phrase is not None:
            self._stems.move_to_end(word)
            return phrase
        if word.isascii() and word.isdigit():
            phrase = (word,)  # FTS5's tokenizer leaves digits as they are: no write to learn that
        else:
            terms = self._terms(word)
            phrase = tuple(terms[p] for p in sorted(terms))
        self._stems[word] = phrase
        if len(self._stems) > STEMS_KEPT:
            self._stems.popitem(last=False)
        return phrase

    def _terms(self, text: str) -> dict[int, str]:
        """Position -> term of each token FTS5 makes of ``text``, read from the one-row table."""
        self._db.execute("DELETE FROM stemmer")
        self._db.execute("INSERT INTO stemmer (rowid, word) VALUES (1, ?)", (text,))
        return dict(self._db.execute("SELECT offset, term FROM stemmer_terms").fetchall())
