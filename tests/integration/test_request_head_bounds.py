"""The bounds on a request head, against a real listener: its size (``MAX_HEAD_BYTES``) and its number of header
lines (``MAX_HEADERS``), each on both sides of its line, whether the head arrives in one read, a byte at a time,
or behind another request on the same connection (after a body of known length, and after a chunked one)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from hangar.server.protocols import MAX_HEAD_BYTES, MAX_HEADERS
from tests.integration.test_connection_limits import Conn
from tests.support.server import RunningServer, running_server

START = b"GET /healthz HTTP/1.1\r\nhost: x\r\n"


def head_of(size: int) -> bytes:
    """A head of exactly ``size`` bytes (blank line included), padded by one long header."""
    pad = size - len(START) - len(b"x-pad: \r\n\r\n")
    return START + b"x-pad: " + b"a" * pad + b"\r\n\r\n"


def head_with(lines: int) -> bytes:
    """A head with exactly ``lines`` header lines (host among them)."""
    return START + b"".join(b"x-h%d: v\r\n" % n for n in range(lines - 1)) + b"\r\n"


def status_of(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.1 ") else 0


async def statuses(conn: Conn, most: int) -> list[int]:
    """The statuses of up to ``most`` answers on ``conn``, fewer when the server closes it first."""
    found: list[int] = []
    for _ in range(most):
        try:
            found.append(await conn.status())
        except ConnectionError:
            rest = bytes(conn.received)
            if rest:
                found.append(status_of(rest))
            break
    return found


@asynccontextmanager
async def server(tmp_path: Path) -> AsyncIterator[RunningServer]:
    async with running_server(tmp_path / "data") as srv:
        yield srv


async def one_request(srv: RunningServer, data: bytes, *, piece: int = 0) -> int:
    """The status of the answer to ``data`` sent on a fresh connection (in pieces of ``piece`` bytes when given)."""
    conn = await Conn.open(srv.url, "127.0.0.5")
    try:
        if piece:
            for at in range(0, len(data), piece):
                conn.send(data[at : at + piece])
                await asyncio.sleep(0)
        else:
            conn.send(data)
        try:
            return await conn.status()
        except ConnectionError:
            return status_of(bytes(conn.received))
    finally:
        conn.close()


async def test_a_head_at_the_size_cap_is_served_and_one_byte_more_is_refused(tmp_path: Path) -> None:
    async with server(tmp_path) as srv:
        assert await one_request(srv, head_of(MAX_HEAD_BYTES)) == 200
        assert await one_request(srv, head_of(MAX_HEAD_BYTES + 1)) == 431
        # The same heads arriving in pieces (the blank line split between reads).
        assert await one_request(srv, head_of(MAX_HEAD_BYTES), piece=4093) == 200
        assert await one_request(srv, head_of(MAX_HEAD_BYTES + 1), piece=4093) == 431


async def test_a_head_behind_another_request_is_held_to_the_same_cap(tmp_path: Path) -> None:
    body = b'{"code": "WRONG-CODE", "deviceName": "x"}'
    post = b"POST /auth/pair HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s" % (
        len(body),
        body,
    )
    chunked = (
        b"POST /auth/pair HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
        b"transfer-encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
    )
    async with server(tmp_path) as srv:
        for first in (post, chunked, START + b"\r\n"):
            for size, wanted in ((MAX_HEAD_BYTES - len(first) - 1, 200), (MAX_HEAD_BYTES + 1, 431)):
                conn = await Conn.open(srv.url, "127.0.0.5")
                conn.send(first + head_of(size))  # one write: both requests usually arrive in one read
                answers = await statuses(conn, 2)
                conn.close()
                # Past the cap the connection may be refused before the first request is answered.
                assert answers[-1] == wanted and len(answers) == (2 if wanted == 200 else len(answers)), answers
                assert answers[0] in (200, 400, 403, 404, 431), answers


async def test_a_head_at_the_header_count_cap_is_served_and_one_line_more_is_refused(tmp_path: Path) -> None:
    async with server(tmp_path) as srv:
        assert len(head_with(MAX_HEADERS + 1)) < MAX_HEAD_BYTES  # the count refuses it, not the size
        assert await one_request(srv, head_with(MAX_HEADERS)) == 200
        assert await one_request(srv, head_with(MAX_HEADERS + 1)) == 431
        assert await one_request(srv, head_with(MAX_HEADERS + 1), piece=7) == 431


async def test_kept_alive_requests_each_get_a_fresh_count(tmp_path: Path) -> None:
    async with server(tmp_path) as srv:
        # Three heads, each at one of the caps, one after another on one connection and in one write.
        for head in (head_with(MAX_HEADERS), head_of(MAX_HEAD_BYTES)):
            conn = await Conn.open(srv.url, "127.0.0.5")
            conn.send(head * 3)
            assert [await conn.status() for _ in range(3)] == [200, 200, 200]
            conn.close()
