"""Snippets made from precomputed token positions are FTS5's own ``snippet()``, text for text, and the search keeps
a bounded set of answers."""

from __future__ import annotations

import sqlite3

import pytest

from hangar.site import search
from hangar.site.search import Doc, SearchIndex

SENTENCES = (
    "Pipelines run steps. A step may retry: the backoff doubles each time. "
    "Rigs are machines; a rig can run a pipeline step too. "
    * 6
    + "At the end, the retry_policy and pipeline_runs tables are read. Naïve café users retry."
)
DOCS = [
    Doc("long", "Pipelines", "Durable runs.", SENTENCES),
    Doc("short", "Rigs", "Machines.", "A rig: retry it."),
    Doc("title-only", "Backoff tables", "About backoff.", "Nothing here matches; only words. " * 4),
    Doc("empty", "Empty retry", "Nothing.", ""),
    Doc("dup", "Repeats", "Words.", "rig rig rig. retry rig. " * 10 + "end: backoff rig retry"),
]


def fts5_snippets(query_match: str) -> dict[str, str]:
    """The snippet FTS5 itself makes of each page's body for a MATCH expression (the oracle)."""
    db = sqlite3.connect(":memory:")
    db.execute(
        "CREATE VIRTUAL TABLE p USING fts5(title, description, body, slug UNINDEXED, tokenize='porter unicode61')"
    )
    db.executemany("INSERT INTO p VALUES (?, ?, ?, ?)", [(d.title, d.description, d.body, d.slug) for d in DOCS])
    rows = db.execute("SELECT slug, snippet(p, 2, '**', '**', ' … ', 16) FROM p WHERE p MATCH ?", (query_match,))
    return dict(rows.fetchall())


@pytest.mark.parametrize(
    "query",
    ["retry", "rig", "backoff retry", "pipeline step", "retry_policy", "naive", "café", "rig rig", "tables", "end"],
)
def test_the_snippet_is_fts5s_own(query: str) -> None:
    index = SearchIndex(DOCS)
    hits = index.search(query, 25)
    assert hits
    words = index.words(query)
    for joiner in (" AND ", " OR "):
        expected = fts5_snippets(joiner.join(f'"{w}"' for w in words))
        if expected:
            break
    assert {h.slug: h.snippet for h in hits} == expected


def test_a_body_the_tokenizers_split_differently_gets_fts5s_snippet() -> None:
    # unicode61 keeps a combining accent inside its token; the regular expression splits there.
    body = "Cafe\u0301 owners retry often. " * 8
    index = SearchIndex([Doc("accent", "Accent", "Marks.", body)])
    hit = index.search("retry")[0]
    assert index._bodies[1] is None  # not lined up: FTS5 made this one
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE p USING fts5(body, tokenize='porter unicode61')")
    db.execute("INSERT INTO p VALUES (?)", (body,))
    (expected,) = db.execute("SELECT snippet(p, 0, '**', '**', ' … ', 16) FROM p WHERE p MATCH '\"retry\"'").fetchone()
    assert hit.snippet == expected and "**retry**" in hit.snippet


def test_answers_are_kept_up_to_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search, "CACHE_ENTRIES", 3)
    index = SearchIndex(DOCS)
    first = index.search("retry")
    index.search("rig")
    index.search("backoff")
    assert index.search("retry") is first  # at the bound, three kept: a repeat is the kept answer
    index.search("pipeline")  # one past it: the least recently used goes
    assert sorted(words for words, _limit in index._kept) == [("backoff",), ("pipeline",), ("retry",)]
    again = index.search("rig")  # searched afresh, the same answer
    assert [(h.slug, h.snippet, h.score) for h in again] == [
        (h.slug, h.snippet, h.score) for h in SearchIndex(DOCS).search("rig")
    ]


def test_stems_are_kept_up_to_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search, "STEMS_KEPT", 2)
    index = SearchIndex(DOCS)
    index.search("retrying rigs")
    assert list(index._stems) == ["retrying", "rigs"]
    assert index._stems["retrying"] == ("retri",)
    index.search("backoff")  # one past the bound: the oldest word goes
    assert list(index._stems) == ["rigs", "backoff"]


def test_a_snippet_is_kept_by_the_phrases_its_page_holds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search, "SNIPPETS_KEPT", 2)
    index = SearchIndex(DOCS)
    first = index.search("doubles zzzunknown", 1)  # only "doubles" is on the page: kept by it alone
    assert list(index._snippets) == [(1, (("doubl",),))]
    index.search("doubles qqqother", 1)  # the same phrase held: the kept snippet, nothing more kept
    assert len(index._snippets) == 1
    index.search("pipeline", 1)
    assert len(index._snippets) == 2  # at the bound
    index.search("rigs", 1)  # one past it: the least recently used goes
    assert len(index._snippets) == 2 and (1, (("doubl",),)) not in index._snippets
    fresh = SearchIndex(DOCS).search("doubles qqqother", 1)
    assert [h.snippet for h in fresh] == [h.snippet for h in first]


def test_a_number_is_its_own_term_as_fts5_makes_it() -> None:
    index = SearchIndex(DOCS)
    for word in ("0", "12", "123", "2026", "0007", "99999999999999999999"):
        assert index._stem(word) == (word,)
        terms = index._terms(word)
        assert tuple(terms[p] for p in sorted(terms)) == (word,)
