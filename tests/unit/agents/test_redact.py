"""Secrets given to a program never come back out through its output, even split across stream chunks."""

from __future__ import annotations

import random

from hangar.core.redact import MARK, Redactor

KEY = "sk-live-0123456789abcdef"
TOKEN = "hgd_" + "Z" * 40


def _stream(redactor: Redactor, chunks: list[str]) -> str:
    return "".join(redactor.feed(c) for c in chunks) + redactor.flush()


def test_a_whole_text_is_cleaned() -> None:
    r = Redactor([KEY, TOKEN, "short"])
    assert r.clean(f"key={KEY} token={TOKEN} short") == f"key={MARK} token={MARK} short"


def test_a_secret_split_across_chunks_never_shows() -> None:
    text = f"env: OPENAI_API_KEY={KEY}\nHANGAR_MCP_TOKEN={TOKEN}\ndone"
    rng = random.Random(7)
    for _ in range(200):
        cuts = sorted(rng.sample(range(1, len(text)), 6))
        chunks = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
        r = Redactor([KEY, TOKEN])
        shown = []
        for c in chunks:
            shown.append(r.feed(c))
            assert KEY not in "".join(shown) and TOKEN not in "".join(shown)
        out = "".join(shown) + r.flush()
        assert out == f"env: OPENAI_API_KEY={MARK}\nHANGAR_MCP_TOKEN={MARK}\ndone"


def test_ordinary_output_flows_without_waiting_for_the_end() -> None:
    r = Redactor([KEY])
    assert r.feed("hello world, nothing secret here\n") == "hello world, nothing secret here\n"
    # A tail that could start the key is held back until the next chunk says it does not.
    assert r.feed("value sk-li") == "value "
    assert r.feed("ne") == "sk-line"
    assert r.flush() == ""


def test_nothing_to_hide_passes_everything() -> None:
    r = Redactor(["", "abc"])
    assert _stream(r, ["a", "b", "c"]) == "abc"
