"""The small HTTP answers the gate gives in place of a destination it will not reach (403, 400, 502...)."""

from __future__ import annotations


def refusal(message: str, status: bytes = b"403 Forbidden") -> bytes:
    """A complete ``text/plain`` answer saying why, ending the connection."""
    body = (message + "\n").encode()
    return (
        b"HTTP/1.1 " + status + b"\r\nContent-Type: text/plain\r\nConnection: close\r\n"
        b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
    )
