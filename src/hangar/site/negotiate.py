"""Choosing a representation from an ``Accept`` header (RFC 9110 section 12.5.1).

The offer with the highest quality wins; a more specific range beats a wildcard for the same offer; among
offers of equal quality the one the client listed first wins, then the server's order. An unparsable or
unmatched header gets the server's first offer, so odd headers never turn a page into an error.
"""

from __future__ import annotations

from functools import lru_cache


def _ranges(accept: str) -> list[tuple[str, str, float, int]]:
    out = []
    for pos, item in enumerate(accept.split(",")):
        fields = [f.strip() for f in item.split(";")]
        mime = fields[0].lower()
        if mime.count("/") != 1:
            continue
        main, sub = mime.split("/")
        q = 1.0
        for f in fields[1:]:
            if f.lower().startswith("q="):
                try:
                    q = float(f[2:])
                except ValueError:
                    q = -1.0
        if not 0.0 <= q <= 1.0:
            continue
        out.append((main, sub, q, pos))
    return out


@lru_cache(maxsize=1024)
def choose(accept: str | None, offers: tuple[str, ...]) -> str:
    if not accept:
        return offers[0]
    ranges = _ranges(accept[:2000])
    best: tuple[float, int, int] | None = None
    choice = offers[0]
    for index, offer in enumerate(offers):
        main, sub = offer.split("/")
        match: tuple[int, float, int] | None = None  # (specificity, q, position)
        for r_main, r_sub, q, pos in ranges:
            if r_main == main and r_sub == sub:
                spec = 2
            elif r_main == main and r_sub == "*":
                spec = 1
            elif r_main == "*" and r_sub == "*":
                spec = 0
            else:
                continue
            if match is None or spec > match[0]:
                match = (spec, q, pos)
        if match is None or match[1] <= 0:
            continue
        # Higher q first, then the client's listing order (earlier is better), then the server's order.
        key = (match[1], -match[2], -index)
        if best is None or key > best:
            best, choice = key, offer
    return choice
