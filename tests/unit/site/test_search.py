from __future__ import annotations

from hangar.site.search import Doc, SearchIndex


def index() -> SearchIndex:
    return SearchIndex(
        [
            Doc("a", "Pair a device", "How devices get credentials.", "Use a pairing code. " * 5),
            Doc("b", "Rigs", "Machines.", "A rig can be paired with a space; pairing is rare here. " * 5),
            Doc("c", "Pipelines", "Durable runs.", "Steps, reducers and routers."),
        ]
    )


def test_title_match_ranks_first() -> None:
    hits = index().search("pairing")
    assert [h.slug for h in hits][:2] == ["a", "b"]
    assert hits[0].score > hits[1].score


def test_snippet_highlights_the_match() -> None:
    hit = index().search("reducers")[0]
    assert hit.slug == "c"
    assert "**reducers**" in hit.snippet


def test_all_words_first_then_any_word() -> None:
    idx = index()
    assert [h.slug for h in idx.search("pipelines routers")] == ["c"]
    assert {h.slug for h in idx.search("pipelines devices")} == {"a", "c"}


def test_operators_are_searched_as_text_never_parsed() -> None:
    idx = index()
    for query in ['"unbalanced', "NEAR(a b", "title:rigs", "a AND OR NOT", "*", "-", "rigs)"]:
        idx.search(query)  # must not raise
    assert idx.search("!!! ???") == []
    assert idx.search("title:rigs")[0].slug == "b"


def test_limit() -> None:
    assert len(index().search("a", limit=1)) <= 1
