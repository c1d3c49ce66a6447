"""Reading an HTTP response that may be cut short: for tests of access checked while a transfer goes on (a person
removed mid-download gets no further piece)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import httpx


async def read_around(r: httpx.Response, midway: Callable[[], Awaitable[None]]) -> tuple[int, BaseException | None]:
    """Read the first piece of ``r``, run ``midway``, read the rest: the bytes read, and the error that cut the
    rest short (None when it came whole)."""
    pieces = r.aiter_raw()
    got = len(await anext(pieces))
    await midway()
    try:
        async for piece in pieces:
            got += len(piece)
    except httpx.HTTPError as exc:
        return got, exc
    return got, None
