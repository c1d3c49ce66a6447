"""Request bodies read against a route's limit: a declared length past it is refused before a byte is read,
and a body that grows past it while streaming stops there. Either way the answer is 413."""

from __future__ import annotations

from starlette.requests import Request
from starlette.types import Message, Receive

from hangar.errors import InvalidArgs


class BodyTooLarge(InvalidArgs):
    http_status = 413

    def __init__(self, limit: int) -> None:
        super().__init__(f"the request body is larger than this route takes ({limit} bytes)", field="body")
        self.detail_code = "too_large"


async def read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge(limit)
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise BodyTooLarge(limit)
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
