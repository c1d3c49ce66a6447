"""Request bodies read against a route's limit: a declared length past it is refused before a byte is read,
and a body that grows past it while streaming stops there. Either way the answer is 413. The whole body must
also arrive within ``BODY_TIMEOUT_S`` (the bodies read here are at most a few MiB): a client sending it a byte at
a time to hold the connection (and the request) open gets 408 (``BodyTooSlow``) instead."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING

from hangar.errors import InvalidArgs

if TYPE_CHECKING:
    # Named for typing only: ``bearer_token`` is read by commands too (the identity part's authentication), which
    # start without Starlette.
    from starlette.requests import Request
    from starlette.types import Message, Receive

BODY_TIMEOUT_S = 30.0


class BodyTooLarge(InvalidArgs):
    http_status = 413

    def __init__(self, limit: int) -> None:
        super().__init__(f"the request body is larger than this route takes ({limit} bytes)", field="body")
        self.detail_code = "too_large"


class BodyTooSlow(InvalidArgs):
    http_status = 408

    def __init__(self, seconds: float, message: str | None = None) -> None:
        super().__init__(message or f"the request body did not arrive within {seconds:g} s", field="body")
        self.detail_code = "too_slow"


async def read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge(limit)
    body = bytearray()
    deadline = BODY_TIMEOUT_S  # read when called: a test (or an operator's patch) may change it
    # The ASGI messages themselves rather than ``request.stream()``: this sits on hot paths (a tool call over
    # MCP), and the generator costs more than the read of a body that came with its head.
    try:
        async with asyncio.timeout(deadline):
            while True:
                message = await request.receive()
                if message["type"] == "http.disconnect":
                    from starlette.requests import ClientDisconnect  # loaded by then: a request came

                    raise ClientDisconnect()
                chunk: bytes = message.get("body", b"")
                if not body and not message.get("more_body", False) and len(chunk) <= limit:
                    return chunk  # the whole body in one message: no copy
                body += chunk
                if len(body) > limit:
                    raise BodyTooLarge(limit)
                if not message.get("more_body", False):
                    return bytes(body)
    except TimeoutError:
        raise BodyTooSlow(deadline) from None


def bearer_token(authorization: str | None) -> str | None:
    """The credential of an ``Authorization: Bearer <token>`` header (any case of the scheme), or ``None``."""
    scheme, _, token = (authorization or "").partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


def replaying(body: bytes, receive: Receive) -> Receive:
    """``receive`` that first hands back a body already read (a gate that looked at it before an ASGI app that
    reads it again)."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


async def paced(request: Request, limit: int, rate: int, grace: float, rate_setting: str) -> AsyncIterator[bytes]:
    """A large body's chunks as they arrive, at most ``limit`` bytes (413), arriving in time. Each byte received
    buys ``1/rate`` s beyond ``grace``, so the body must be whole by ``grace + size / rate`` and a client that stops
    sending, or trickles slower than ``rate``, runs out of time wherever it is (408, naming ``rate_setting``)."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge(limit)
    start = asyncio.get_running_loop().time()
    total = 0
    chunks = request.stream()
    while True:
        try:
            async with asyncio.timeout_at(start + grace + total / rate):
                chunk = await anext(chunks)
        except StopAsyncIteration:
            return
        except TimeoutError:
            raise BodyTooSlow(
                grace,
                f"the upload arrived slower than {rate} bytes per second after its first {grace:g} s ({rate_setting})",
            ) from None
        total += len(chunk)
        if total > limit:
            raise BodyTooLarge(limit)
        yield chunk


async def receive_file(request: Request, path: Path, limit: int, rate: int, grace: float, rate_setting: str) -> int:
    """A large body streamed into a new file at ``path`` (0600, never through a symlink), read as ``paced`` reads
    it. The bytes received."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge(limit)  # before the file is made
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "wb") as out:
        total = 0
        async for chunk in paced(request, limit, rate, grace, rate_setting):
            total += len(chunk)
            out.write(chunk)
    return total
