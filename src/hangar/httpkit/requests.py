"""Request bodies read against a route's limit: a declared length past it is refused before a byte is read,
and a body that grows past it while streaming stops there. Either way the answer is 413. The whole body must
also arrive within ``BODY_TIMEOUT_S`` (the bodies read here are at most a few MiB): a client sending it a byte at
a time to hold the connection (and the request) open gets 408 (``BodyTooSlow``) instead."""

from __future__ import annotations

import asyncio

from starlette.requests import Request
from starlette.types import Message, Receive

from hangar.errors import InvalidArgs

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
    try:
        async with asyncio.timeout(deadline):
            async for chunk in request.stream():
                body += chunk
                if len(body) > limit:
                    raise BodyTooLarge(limit)
    except TimeoutError:
        raise BodyTooSlow(deadline) from None
    return bytes(body)


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
