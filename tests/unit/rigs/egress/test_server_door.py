"""The gate's server door against a recording peer on host loopback: what reaches the server, what is refused."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator

import pytest

from hangar.rigs.egress import gate as gate_module
from hangar.rigs.egress.gate import EgressGate
from hangar.rigs.egress.server_door import DoorTarget, Malformed, parse_head
from hangar.rigs.loopback import CLAIM_PREFIX, is_rig_address
from tests.unit.rigs.egress.gate_support import start_gate


class Server:
    """Stands in for the server's listener: records every byte of each connection, answers once the request
    went quiet, optionally as a slow event stream."""

    def __init__(self, events: int = 0, gap_s: float = 0.0) -> None:
        self.received: list[bytes] = []
        self.peers: list[str] = []
        self.events, self.gap_s = events, gap_s
        self.port = 0
        self._server: asyncio.AbstractServer | None = None

    async def start(self) -> None:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            got = bytearray()
            with contextlib.suppress(TimeoutError):
                while chunk := await asyncio.wait_for(reader.read(65536), 0.3):
                    got += chunk
            self.received.append(bytes(got))
            self.peers.append(str(writer.get_extra_info("peername")[0]))
            if self.events:
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n")
                for n in range(self.events):
                    await asyncio.sleep(self.gap_s)
                    writer.write(b"data: %d\n\n" % n)
                    await writer.drain()
            else:
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\nserved")
            await writer.drain()
            writer.close()

        self._server = await asyncio.start_server(handle, "127.0.0.1", 0)
        self.port = int(self._server.sockets[0].getsockname()[1])

    def close(self) -> None:
        assert self._server is not None
        self._server.close()


@pytest.fixture
async def server() -> AsyncIterator[Server]:
    s = Server()
    await s.start()
    yield s
    s.close()


async def open_gate(server: Server) -> EgressGate:
    door = DoorTarget.from_url(f"http://127.0.0.1:{server.port}/mcp")
    return await start_gate(lambda ports: EgressGate("rig-d", set(), ports=ports), door)


@pytest.fixture
async def gate(server: Server) -> AsyncIterator[EgressGate]:
    g = await open_gate(server)
    yield g
    await g.aclose()


async def exchange(gate: EgressGate, data: bytes) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", gate.ports.server_door)
    writer.write(data)
    answer = await asyncio.wait_for(reader.read(), 5)
    writer.close()
    return answer


POST = (
    b"POST /mcp?x=1 HTTP/1.1\r\nHost: 198.18.0.1:984\r\nConnection: keep-alive\r\nX-Forwarded-For: 10.0.0.9\r\n"
    b'Forwarded: for=10.0.0.9\r\nAuthorization: Bearer t0k\r\nContent-Length: 7\r\n\r\n{"a":1}'
)


async def test_mcp_request_goes_on_alone_with_the_servers_host_and_connection_close(
    gate: EgressGate, server: Server
) -> None:
    pipelined = b"GET /rpc HTTP/1.1\r\nHost: x\r\n\r\n"
    assert (await exchange(gate, POST + pipelined)).endswith(b"served")
    (seen,) = server.received
    assert seen == (
        b"POST /mcp?x=1 HTTP/1.1\r\nAuthorization: Bearer t0k\r\nContent-Length: 7\r\n"
        b'Host: 127.0.0.1:%d\r\nConnection: close\r\n\r\n{"a":1}' % server.port
    )  # the pipelined request never reached the server; proxy claims and the rig's Host are gone
    assert (gate.events[-1].kind, gate.events[-1].target, gate.events[-1].allowed) == ("server", "/mcp", True)


async def test_chunked_body_is_passed_to_its_last_chunk_only(gate: EgressGate, server: Server) -> None:
    body = b"4\r\nab\r\n\r\n3;ext=1\r\ncde\r\n0\r\nX-Trailer: 1\r\n\r\n"
    head = b"POST /mcp HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
    await exchange(gate, head + body + b"GET /rpc HTTP/1.1\r\n\r\n")
    assert server.received[0].endswith(b"Connection: close\r\n\r\n" + body)


async def test_a_long_event_stream_outlives_the_gates_read_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(gate_module, "READ_TIMEOUT_S", 0.2)
    slow = Server(events=5, gap_s=0.15)
    await slow.start()
    g = await open_gate(slow)
    try:
        answer = await exchange(g, b"GET /mcp HTTP/1.1\r\nHost: h\r\nAccept: text/event-stream\r\n\r\n")
        assert answer.endswith(b"data: 0\n\ndata: 1\n\ndata: 2\n\ndata: 3\n\ndata: 4\n\n")
    finally:
        await g.aclose()
        slow.close()


@pytest.mark.parametrize(
    "target", [b"/rpc", b"/auth/pair", b"/healthz", b"/mcp/", b"/mcpx", b"/%6dcp", b"/mcp/../rpc", b"/MCP"]
)
async def test_other_paths_are_refused_saying_why(gate: EgressGate, server: Server, target: bytes) -> None:
    answer = await exchange(gate, b"POST " + target + b" HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\n{}")
    assert answer.startswith(b"HTTP/1.1 403 Forbidden\r\n")
    assert b"is not reachable from this rig: the server door passes only the MCP endpoint, /mcp" in answer
    assert server.received == []
    event = gate.events[-1]
    assert (event.kind, event.target, event.allowed, event.reason) == ("server", target.decode(), False,
                                                                       "not the MCP endpoint")  # fmt: skip


async def test_resource_metadata_passes(gate: EgressGate, server: Server) -> None:
    answer = await exchange(gate, b"GET /.well-known/oauth-protected-resource HTTP/1.1\r\nHost: h\r\n\r\n")
    assert answer.endswith(b"served") and len(server.received) == 1


@pytest.mark.parametrize(
    ("head", "why"),
    [
        (b"POST /mcp HTTP/1.1\r\nHost : h\r\n\r\n", "a header line is not NAME: value"),
        (b"POST /mcp HTTP/1.1\r\nHost: h\r\n folded\r\n\r\n", "a header line is not NAME: value"),
        (b"POST /mcp HTTP/1.1\r\nX: a\nContent-Length: 5\r\n\r\n", "the X header holds control characters"),
        (b"POST http://127.0.0.1/mcp HTTP/1.1\r\nHost: h\r\n\r\n", "the request target is not a path"),
        (b"POST /mcp HTTP/2\r\nHost: h\r\n\r\n", "the request line is not METHOD /path HTTP/1.1"),
        (b"POST  /mcp HTTP/1.1\r\nHost: h\r\n\r\n", "the request line is not METHOD /path HTTP/1.1"),
        (b"POST /mcp HTTP/1.1\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n",
         "the body is framed by both Content-Length and Transfer-Encoding"),
        (b"POST /mcp HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n", "Content-Length is not one"),
        (b"POST /mcp HTTP/1.1\r\nContent-Length: -2\r\n\r\n", "Content-Length is not one"),
        (b"POST /mcp HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", "the only transfer coding"),
    ],
)  # fmt: skip
async def test_malformed_heads_are_refused(gate: EgressGate, server: Server, head: bytes, why: str) -> None:
    with pytest.raises(Malformed, match=why):
        parse_head(head)
    answer = await exchange(gate, head)
    assert answer.startswith(b"HTTP/1.1 400 Bad Request\r\n") and why.encode() in answer
    assert server.received == [] and not gate.events[-1].allowed


async def test_an_oversized_head_is_refused(gate: EgressGate, server: Server) -> None:
    answer = await exchange(gate, b"GET /mcp HTTP/1.1\r\nX: " + b"a" * (gate_module.HEAD_LIMIT + 10) + b"\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 431 ") and server.received == []


async def test_closing_the_door_stops_the_listener_and_ends_open_exchanges() -> None:
    slow = Server(events=100, gap_s=0.1)
    await slow.start()
    g = await open_gate(slow)
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", g.ports.server_door)
        writer.write(b"GET /mcp HTTP/1.1\r\nHost: h\r\n\r\n")
        assert b"data: 0" in await asyncio.wait_for(reader.readuntil(b"data: 0\n\n"), 5)
        await g.close_server_door()
        rest = await asyncio.wait_for(reader.read(), 5)  # ended, long before the 100 events
        assert b"data: 99" not in rest
        writer.close()
        with pytest.raises(OSError):
            await asyncio.open_connection("127.0.0.1", g.ports.server_door)
    finally:
        await g.aclose()
        slow.close()


def test_door_target_is_a_plain_http_listener() -> None:
    assert DoorTarget.from_url("http://[::1]:8420/mcp") == DoorTarget("::1", 8420, "[::1]:8420")
    for url in ("https://127.0.0.1:8420/mcp", "http://127.0.0.1/mcp", "unix:///x"):
        with pytest.raises(ValueError):
            DoorTarget.from_url(url)


async def test_closing_the_door_ends_an_idle_stream_on_the_servers_side_too() -> None:
    ended = asyncio.Event()

    async def idle_stream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n")
        await writer.drain()
        await reader.read()  # the gate's side of the connection ends
        ended.set()
        writer.close()

    upstream = await asyncio.start_server(idle_stream, "127.0.0.1", 0)
    idle = Server()
    idle.port = int(upstream.sockets[0].getsockname()[1])
    g = await open_gate(idle)
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", g.ports.server_door)
        writer.write(b"GET /mcp HTTP/1.1\r\nHost: h\r\n\r\n")
        await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
        await g.close_server_door()
        await asyncio.wait_for(ended.wait(), 5)
        writer.close()
    finally:
        await g.aclose()
        upstream.close()


async def test_a_rig_holds_at_most_its_cap_of_exchanges_through_the_door(
    gate: EgressGate, server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gate_module, "MAX_DOOR_CONNECTIONS", 3, raising=False)
    request = b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"
    # Three exchanges whose requests are still coming: at the cap, each is let through.
    held = [await asyncio.open_connection("127.0.0.1", gate.ports.server_door) for _ in range(3)]
    for _reader, writer in held:
        writer.write(request[:20])
        await writer.drain()
    for _ in range(100):
        if len(gate._door_writers) == 3:
            break
        await asyncio.sleep(0.02)
    assert len(gate._door_writers) == 3
    # One past it is answered 503 and closed, without reaching the server.
    refused = await exchange(gate, request)
    assert refused.startswith(b"HTTP/1.1 503") and b"holds 3 exchanges" in refused
    # The held ones go on and are served.
    for reader, writer in held:
        writer.write(request[20:])
        assert (await asyncio.wait_for(reader.read(), 5)).endswith(b"served")
        writer.close()


async def test_the_door_reaches_the_server_from_the_rigs_own_loopback_address(server: Server) -> None:
    """Each rig's exchanges leave from an address of its own in ``127.128.0.0/9``, so the server's cap per
    client address counts rigs apart and never against the host's own clients on 127.0.0.1; the address is
    given back when the door closes."""
    first, second = await open_gate(server), await open_gate(server)
    try:
        for g in (first, second, first):
            assert (await exchange(g, POST)).endswith(b"served")
        assert is_rig_address(server.peers[0]) and is_rig_address(server.peers[1])
        assert server.peers[0] == server.peers[2] != server.peers[1]
        held = server.peers[0]
        await first.close_server_door()
        assert first._door_source is None  # released: the address may go to another rig
        reclaimed = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        reclaimed.bind(f"\0{CLAIM_PREFIX}{held}")
        reclaimed.close()
    finally:
        await first.aclose()
        await second.aclose()
