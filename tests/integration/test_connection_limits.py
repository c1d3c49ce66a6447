"""Slow clients against real listeners (slowloris): connections that send a request head a byte at a time from one
address, more of them than the process has descriptors, leave everybody else answered on the server and on its
website, and are closed once the request-head deadline passes; each cap (per address, in total) holds on both
sides of its line, a trusted proxy is held to the total only, a WebSocket keeps its place until it closes, and a
request body sent a byte at a time is refused once its own deadline passes.

Clients pick their source address among the loopback addresses (127.0.0.2, 127.0.0.3, ...) so one test plays
an attacker and a bystander on one machine."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
import websockets

from hangar.httpkit import requests
from hangar.server import protocols
from hangar.server.connections import ConnectionGuard, descriptor_ceiling
from tests.support.processes import hangar_serve
from tests.support.server import RunningServer, running_server

ATTACKER = "127.0.0.2"
HEAD = b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n"


class Conn(asyncio.Protocol):
    """One raw TCP connection from a chosen source address, keeping every byte the server sends (a reset that
    follows an answer loses nothing), when it ended and whether it ended in an error.

    One thing a client cannot help: when the server closes with our bytes unread, the kernel resets the connection,
    and if our next write meets the reset before the loop has read the answer, asyncio drops the connection with
    the answer still unread (``received`` stays empty and ``error`` holds the reset)."""

    def __init__(self) -> None:
        loop = asyncio.get_running_loop()
        self.transport: asyncio.Transport | None = None
        self.received = bytearray()
        self.closed: asyncio.Future[None] = loop.create_future()
        self.opened_at = loop.time()
        self.lasted: float | None = None  # seconds from opening to the end
        self.error: Exception | None = None
        self._more = asyncio.Event()

    @classmethod
    async def open(cls, url: str, source: str) -> Conn:
        parts = urlsplit(url)
        loop = asyncio.get_running_loop()
        asked_at = loop.time()
        _transport, conn = await loop.create_connection(cls, parts.hostname, parts.port, local_addr=(source, 0))
        # Timed from the connect, not from when this loop got round to making the protocol: on a loaded machine
        # that came after the server's accept, and a head closed at its deadline looked closed early.
        conn.opened_at = asked_at
        return conn

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.received += data
        self._more.set()

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.lasted = asyncio.get_running_loop().time() - self.opened_at
            self.error = exc
            self.closed.set_result(None)
        self._more.set()

    async def send_in_thirds(self, head: bytes, body: bytes, pause: float) -> None:
        """``head`` and ``body`` in three pieces, ``pause`` seconds apart: a body that trickles in but ends in time
        when ``pause`` is a third of its deadline."""
        third = len(body) // 3
        self.send(head + body[:third])
        await asyncio.sleep(pause)
        self.send(body[third : 2 * third])
        await asyncio.sleep(pause)
        self.send(body[2 * third :])

    def send(self, data: bytes) -> bool:
        """Whether the bytes were written (not on a connection already closed)."""
        if self.transport is None or self.closed.done() or self.transport.is_closing():
            return False
        self.transport.write(data)
        return True

    async def answer(self, timeout: float = 60) -> bytes:
        """Everything the server sent, once it has closed the connection (b"" when it closed without a word)."""
        await asyncio.wait_for(asyncio.shield(self.closed), timeout)
        return bytes(self.received)

    async def status(self, timeout: float = 30) -> int:
        """The status of the next whole answer on this connection (which stays open)."""
        async with asyncio.timeout(timeout):
            while True:
                head, sep, rest = bytes(self.received).partition(b"\r\n\r\n")
                if sep:
                    lines = head.decode().split("\r\n")
                    length = next(
                        (int(v) for n, _, v in (x.partition(":") for x in lines[1:]) if n.lower() == "content-length"),
                        0,
                    )
                    if len(rest) >= length:
                        del self.received[: len(head) + len(sep) + length]
                        return int(lines[0].split()[1])
                if self.closed.done():
                    raise ConnectionError("closed before a whole answer")
                self._more.clear()
                await self._more.wait()

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


async def healthz(url: str, source: str = "127.0.0.1") -> int:
    transport = httpx.AsyncHTTPTransport(local_address=source)
    async with httpx.AsyncClient(transport=transport, timeout=20) as client:
        return (await client.get(f"{url}/healthz")).status_code


async def _dribble(conns: list[Conn], stop: asyncio.Event, every: float) -> None:
    """Keep each head unfinished: one more byte of a header line every ``every`` seconds."""
    while not stop.is_set():
        for conn in conns:
            conn.send(b"x")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), every)


async def test_slow_heads_past_the_descriptor_limit_leave_everybody_else_answered(tmp_path: Path) -> None:
    descriptors = 512
    per_address = 256  # the default
    env = {"HANGAR_REQUEST_HEAD_TIMEOUT": "8"}
    with hangar_serve(tmp_path / "data", site=True, env=env, descriptors=descriptors) as serve:
        assert serve.site_url is not None
        # The attack: 300 heads started on each listener from one address, more than the process has
        # descriptors, each kept unfinished by a byte a second.
        slow: list[Conn] = []
        for url in (serve.url, serve.site_url):
            for _ in range(300):
                conn = await Conn.open(url, ATTACKER)
                conn.send(b"GET /healthz HTTP/1.1\r\nx-slow: ")
                slow.append(conn)
        stop = asyncio.Event()
        dribbling = asyncio.create_task(_dribble(slow, stop, 1.0))
        try:
            # Everybody else is answered, on both listeners, while the attack goes on.
            assert await healthz(serve.url) == 200
            assert await healthz(serve.site_url) == 200
        finally:
            stop.set()
            await dribbling
        answers = [await conn.answer() for conn in slow]
        for conn in slow:
            conn.close()
        timed_out = [c for c, a in zip(slow, answers, strict=True) if a.startswith(b"HTTP/1.1 408")]
        refused = [c for c, a in zip(slow, answers, strict=True) if a.startswith(b"HTTP/1.1 503")]
        # A refused connection whose answer our own write lost to the reset that followed it (see Conn): the
        # server refused it all the same, and at once.
        reset = [c for c, a in zip(slow, answers, strict=True) if a == b"" and isinstance(c.error, OSError)]
        # The address held its 256 places (the process's, on both listeners); every further connection was
        # refused at once, well before the deadline; every slow head it held was closed at the deadline, with a 408.
        odd = [a for c, a in zip(slow, answers, strict=True) if c not in timed_out + refused + reset]
        assert len(timed_out) == per_address and len(refused) + len(reset) == len(slow) - per_address, odd
        # (asyncio timers may fire a clock tick early)
        assert all(c.lasted is not None and c.lasted >= 7.9 for c in timed_out)
        assert all(c.lasted is not None and c.lasted < 4 for c in refused + reset)
        assert refused, "no refusal was answered"
        assert b"too many connections" in refused[0].received and b"retry-after: 5" in refused[0].received
        # And the address may come back.
        assert await healthz(serve.url, ATTACKER) == 200
        assert "connections refused" in serve.log_text() and "slow request heads closed" in serve.log_text()


async def test_the_total_stays_below_the_descriptor_limit() -> None:
    assert descriptor_ceiling(1024) == 768
    assert descriptor_ceiling(256) == 128
    assert descriptor_ceiling(100_000) == 75_000


@contextlib.asynccontextmanager
async def server(tmp_path: Path, **limits: object) -> AsyncIterator[tuple[RunningServer, ConnectionGuard]]:
    async with running_server(tmp_path / "data", **limits) as srv:
        yield srv, srv.guard


async def test_one_address_holds_its_cap_and_not_one_more(tmp_path: Path) -> None:
    async with server(tmp_path, max_connections_per_address=4) as (srv, guard):
        held = [await Conn.open(srv.url, "127.0.0.3") for _ in range(4)]
        # At the cap: all four are served.
        for conn in held:
            assert conn.send(HEAD) and await conn.status() == 200
        # One past it: refused at once, before a byte is read.
        extra = await Conn.open(srv.url, "127.0.0.3")
        assert (await extra.answer()).startswith(b"HTTP/1.1 503")
        # Another address is not held to this one's cap.
        assert await healthz(srv.url, "127.0.0.4") == 200
        # A connection given back is a place free again.
        held.pop().close()
        for _ in range(100):
            if guard.held_by("127.0.0.3") < 4:
                break
            await asyncio.sleep(0.05)
        again = await Conn.open(srv.url, "127.0.0.3")
        assert again.send(HEAD) and await again.status() == 200
        for conn in [*held, again]:
            conn.close()


async def test_the_total_cap_holds_across_addresses_and_served_connections_go_on(tmp_path: Path) -> None:
    async with server(tmp_path, max_connections=6, max_connections_per_address=3) as (srv, guard):
        mine = await Conn.open(srv.url, "127.0.0.1")
        assert mine.send(HEAD) and await mine.status() == 200
        held = [await Conn.open(srv.url, source) for source in ("127.0.0.3",) * 3 + ("127.0.0.4",) * 2]
        # At the total (six): every one is served.
        for conn in held:
            assert conn.send(HEAD) and await conn.status() == 200
        assert guard.open == 6
        # One past it, from an address holding nothing yet: refused.
        extra = await Conn.open(srv.url, "127.0.0.5")
        assert (await extra.answer()).startswith(b"HTTP/1.1 503")
        # A connection already held goes on being answered.
        assert mine.send(HEAD) and await mine.status() == 200
        for conn in [mine, *held]:
            conn.close()


async def test_a_trusted_proxy_is_held_to_the_total_only(tmp_path: Path) -> None:
    proxy = "127.0.0.6"
    async with server(tmp_path, max_connections_per_address=2, trusted_proxies=(proxy,)) as (srv, _guard):
        through = [await Conn.open(srv.url, proxy) for _ in range(5)]
        for conn in through:
            assert conn.send(HEAD) and await conn.status() == 200
        for conn in through:
            conn.close()


async def test_a_head_must_arrive_within_the_deadline(tmp_path: Path) -> None:
    async with server(tmp_path, request_head_timeout=3) as (srv, _guard):
        # A head that arrives in pieces, well within the deadline, is answered.
        prompt = await Conn.open(srv.url, "127.0.0.3")
        for piece in (HEAD[:10], HEAD[10:20], HEAD[20:]):
            prompt.send(piece)
            await asyncio.sleep(0.2)
        assert await prompt.status() == 200
        # The same connection kept alive: a second head left unfinished is closed with a 408.
        prompt.send(HEAD[:20])
        assert (await prompt.answer()).startswith(b"HTTP/1.1 408")
        # A head that never finishes on a new connection: a 408, then the connection is closed.
        stalled = await Conn.open(srv.url, "127.0.0.3")
        stalled.send(HEAD[:20])
        assert (await stalled.answer()).startswith(b"HTTP/1.1 408")
        # A connection that sends nothing at all is closed without a word.
        silent = await Conn.open(srv.url, "127.0.0.3")
        assert await silent.answer() == b""
        for conn in (prompt, stalled, silent):
            conn.close()


async def test_a_kept_connection_idles_for_the_keep_alive_and_each_later_head_has_its_deadline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between requests a kept-alive connection is idle for up to the keep-alive timeout, longer than the head
    deadline (clients retire idle connections before the server closes them, so none races a request onto a
    closing one); a later head's deadline runs from its first byte; idle past the keep-alive, the connection is
    closed without a word, not before."""
    deadline, keep_alive = 2.0, 5
    monkeypatch.setattr(protocols, "KEEP_ALIVE_S", keep_alive)
    async with server(tmp_path, request_head_timeout=deadline) as (srv, _guard):
        loop = asyncio.get_running_loop()
        kept = await Conn.open(srv.url, "127.0.0.4")
        for _ in range(2):
            assert kept.send(HEAD), "closed while in use"
            assert await kept.status() == 200
            await asyncio.sleep(deadline * 1.5)  # idle past the head deadline, within the keep-alive
        # A head begun after the idle wait has its own deadline, from its first byte.
        began = loop.time()
        kept.send(HEAD[:10])
        assert (await kept.answer()).startswith(b"HTTP/1.1 408")
        assert deadline - 0.2 <= loop.time() - began, loop.time() - began
        # Left idle after an answer: closed at the keep-alive, without a word.
        idle = await Conn.open(srv.url, "127.0.0.4")
        idle.send(HEAD)
        assert await idle.status() == 200
        answered = loop.time()
        assert await idle.answer() == b""
        assert keep_alive - 0.2 <= loop.time() - answered, loop.time() - answered
        for conn in (kept, idle):
            conn.close()


async def test_a_websocket_keeps_its_place_until_it_closes(tmp_path: Path) -> None:
    async with server(tmp_path, max_connections_per_address=2) as (srv, guard):
        headers = {"Authorization": f"Bearer {srv.owner_token}"}
        async with websockets.connect(srv.ws_url, additional_headers=headers) as ws:
            await ws.send('{"id": 1, "op": "server.info", "args": {}}')
            await ws.recv()
            assert guard.held_by("127.0.0.1") == 1
        for _ in range(100):
            if guard.held_by("127.0.0.1") == 0:
                break
            await asyncio.sleep(0.05)
        assert guard.held_by("127.0.0.1") == 0


async def test_a_body_must_arrive_within_its_deadline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(requests, "BODY_TIMEOUT_S", 2.0, raising=False)
    async with server(tmp_path) as (srv, _guard):
        body = b'{"code": "WRONG-CODE"}'
        head = f"POST /auth/pair HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {len(body)}"
        # A body sent in pieces within the deadline is read (and the wrong code refused as such).
        prompt = await Conn.open(srv.url, "127.0.0.3")
        prompt.send(head.encode() + b"\r\n\r\n" + body[:5])
        await asyncio.sleep(0.3)
        prompt.send(body[5:])
        assert await prompt.status() in (400, 403, 404)
        # A body left unfinished is refused with a 408 once the deadline passes.
        stalled = await Conn.open(srv.url, "127.0.0.3")
        stalled.send(head.encode() + b"\r\n\r\n" + body[:5])
        assert await stalled.status() == 408
        for conn in (prompt, stalled):
            conn.close()
