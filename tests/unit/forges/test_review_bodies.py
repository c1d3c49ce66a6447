"""Which findings become inline comments (``forge.prComment``): those on the diff's lines, at most
``MAX_INLINE_COMMENTS``; the rest go in the review's body."""

from __future__ import annotations

from typing import Any

import pytest

from hangar.errors import InvalidArgs
from hangar.forges.review_bodies import MAX_INLINE_COMMENTS, _comment_parts, _placed


def at(line: int, end: int | None = None, file: str = "a.py") -> dict[str, Any]:
    return {"file": file, "line": line, "endLine": end or line, "severity": "low", "category": "style",
            "message": "m", "suggestion": "", "bucket": "one", "raisedBy": 1}  # fmt: skip


def test_findings_on_the_diff_are_inline_and_ranges_keep_their_start() -> None:
    lines = {"a.py": {1, 2, 3, 10}}
    inline, outside = _placed([at(2), at(1, 3), at(3, 9), at(50), at(2, file="b.py")], 2, lines)
    assert [(c.path, c.start_line, c.line) for c in inline] == [("a.py", None, 2), ("a.py", 1, 3), ("a.py", None, 3)]
    assert outside == [3, 4]
    assert inline[1].wire() == {"path": "a.py", "line": 3, "side": "RIGHT", "body": inline[1].body,
                                "start_line": 1, "start_side": "RIGHT"}  # fmt: skip
    assert "raised by 1 of 2 (one reviewer)" in inline[0].body


@pytest.mark.parametrize("count", [MAX_INLINE_COMMENTS, MAX_INLINE_COMMENTS + 1])
def test_at_most_the_limit_are_inline(count: int) -> None:
    lines = {"a.py": set(range(1, count + 1))}
    inline, outside = _placed([at(n) for n in range(1, count + 1)], 1, lines)
    assert len(inline) == MAX_INLINE_COMMENTS and len(outside) == count - MAX_INLINE_COMMENTS


@pytest.mark.parametrize(
    ("value", "named"),
    [
        ("", "consolidated_findings is empty"),
        (3, "neither a comment's text nor"),
        ({"findings": [{"line": 1}]}, r"consolidated_findings\.findings\[0\]\.severity is missing or not text"),
        ({"findings": [], "verdict": "merge"}, "verdict 'merge' is not a verdict"),
    ],
)
def test_consolidated_findings_of_another_shape_are_refused(value: Any, named: str) -> None:
    with pytest.raises(InvalidArgs, match=named):
        _comment_parts(value)


def test_text_is_a_comment_review() -> None:
    assert _comment_parts("Looks fine.")[:2] == ("Looks fine.", "COMMENT")
