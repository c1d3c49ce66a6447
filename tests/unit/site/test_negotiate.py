from __future__ import annotations

import pytest

from hangar.site.negotiate import choose

PAGE = ("text/html", "text/markdown")
NOT_FOUND = ("text/html", "text/markdown", "application/json")


@pytest.mark.parametrize(
    ("accept", "offers", "expected"),
    [
        (None, PAGE, "text/html"),
        ("", PAGE, "text/html"),
        ("text/markdown", PAGE, "text/markdown"),
        ("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", PAGE, "text/html"),
        ("text/markdown, text/html;q=0.9", PAGE, "text/markdown"),
        ("text/markdown, */*", PAGE, "text/markdown"),
        ("text/html, text/markdown", PAGE, "text/html"),
        ("text/markdown, text/html", PAGE, "text/markdown"),
        ("text/markdown;q=0, */*", PAGE, "text/html"),
        ("application/json", PAGE, "text/html"),  # nothing offered matches: the default, never an error
        ("garbage;;;,,", PAGE, "text/html"),
        ("text/markdown;q=abc", PAGE, "text/html"),
        ("text/markdown;q=2", PAGE, "text/html"),
        ("TEXT/MARKDOWN", PAGE, "text/markdown"),
        ("application/json", NOT_FOUND, "application/json"),
        ("application/*", NOT_FOUND, "application/json"),
        ("text/*", NOT_FOUND, "text/html"),
        ("*/*", NOT_FOUND, "text/html"),
        ("text/markdown", NOT_FOUND, "text/markdown"),
        ("application/json;q=0.5, text/markdown;q=0.6", NOT_FOUND, "text/markdown"),
    ],
)
def test_choose(accept: str | None, offers: tuple[str, ...], expected: str) -> None:
    assert choose(accept, offers) == expected


def test_huge_header_is_bounded() -> None:
    assert choose("text/plain," * 100_000 + "text/markdown", PAGE) == "text/html"
