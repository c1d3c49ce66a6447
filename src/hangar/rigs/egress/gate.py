"""The per-rig egress gate: the only way out of a rig's network namespace.

Why our own: the gate must decide per connection from names the rig cannot forge into something else (the
TLS SNI and the HTTP Host header, resolved by the gate itself, never an address the rig picked), log every
refusal against the rig, and answer DNS from the allowlist without querying upstream. A general proxy
(squid, tinyproxy) would need a config per rig and cannot see the original destination of redirected
traffic; this is a few hundred lines of asyncio.

Its listeners are sockets created inside the rig's namespace (see ``rules`` for how traffic reaches them);
its upstream connections leave from the host's namespace. Only names matching the allowlist get through,
and only on ports 80 (HTTP) and 443 (TLS, passed through without being terminated), and only to an address
the name resolved to that ``addresses`` permits (never this host's own, loopback, link-local or metadata
addresses; private ones only for hosts the operator or an admin named), connected to as checked
(``upstream``). The server door (``server_door``) is a listener of its own, there only while
``open_server_door`` holds it open.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import socket
import struct
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import cast

from hangar.core.addresses import AddressRefused, normalize_host
from hangar.errors import Unavailable
from hangar.rigs import loopback
from hangar.rigs.egress import dns, server_door, sni
from hangar.rigs.egress.allowlist import DEVELOPER_BASELINE, matches, validate_patterns
from hangar.rigs.egress.answers import refusal
from hangar.rigs.egress.http_head import host_header, one_request
from hangar.rigs.egress.relay import relay
from hangar.rigs.egress.rules import DEFAULT_PORTS, GATE_ADDRESS, GatePorts
from hangar.rigs.egress.upstream import connect

log = logging.getLogger("hangar.rigs.egress")

SO_ORIGINAL_DST = 80
HEAD_LIMIT = 32 * 1024
READ_TIMEOUT_S = 10.0
CONNECT_TIMEOUT_S = 10.0
CLOSE_TIMEOUT_S = 5.0
# Connections one rig holds open to its gate at once, over all its listeners (each is a descriptor of the server
# process, and an allowed one a second for its upstream): past it a new one is closed at once, so code in a rig
# cannot use up the server's descriptors. Refusals are recorded at most once every REFUSALS_EVERY_S.
MAX_CONNECTIONS = 256
REFUSALS_EVERY_S = 10.0
# Exchanges one rig holds open through its server door at once: each is a connection to the server's listener from
# the host's loopback, where it counts under that address's share of the server's connections (which the people
# on this host use too), so a rig gets a few (an MCP client holds one or two), never that whole share.
MAX_DOOR_CONNECTIONS = 16

SocketFactory = Callable[[int, int], Awaitable[socket.socket]]


@dataclass(frozen=True)
class EgressEvent:
    at: float  # time.time()
    kind: str  # "dns", "http", "tls", "tcp", "udp", "server" (the server door)
    target: str  # name or address:port the rig asked for
    allowed: bool
    reason: str
    # The rule that refused (a refusal only): "allowlist" (the name is not allow-listed), "address" (it resolves
    # only to addresses rigs may not reach), "port" (not 80 or 443), "direct" (around the gate), "protocol" (no
    # name to check), "limit" (too many connections), "unreachable" (the host did not answer), "server" (the door).
    rule: str = ""


RefusalListener = Callable[[EgressEvent], None]


class EgressGate:
    """One rig's gate. ``start`` binds its listeners through ``make_socket`` (sockets in the rig's namespace)."""

    def __init__(
        self,
        rig_id: str,
        allow: Iterable[str],
        *,
        ports: GatePorts = DEFAULT_PORTS,
        upstream_overrides: Mapping[str, tuple[str, int]] | None = None,
    ) -> None:
        self.rig_id = rig_id
        self.ports = ports
        self._allow: set[str] = set(validate_patterns(allow))
        # Test-only: "name:port" -> (address, port) instead of resolving the name on the host.
        self._overrides = dict(upstream_overrides or {})
        self.events: deque[EgressEvent] = deque(maxlen=1000)
        self._servers: list[asyncio.AbstractServer] = []
        self._transports: list[asyncio.BaseTransport] = []
        self._tasks: set[asyncio.Task[None]] = set()
        # Connections being answered or relayed: a closed gate ends them (an upstream that never hangs up would
        # otherwise keep a relay of a destroyed rig going).
        self._connections: set[asyncio.Task[object]] = set()
        self._refused_at = -REFUSALS_EVERY_S
        self._door: server_door.DoorTarget | None = None
        # The door's connections to the server leave from the rig's own loopback address (``hangar.rigs.loopback``)
        # when the server listens on loopback: the server's per-address connection cap then counts each rig
        # apart, and busy rigs never take the places of the host's own local clients on 127.0.0.1.
        self._door_source: loopback.LoopbackClaim | None = None
        self._door_server: asyncio.AbstractServer | None = None
        self._door_writers: set[asyncio.StreamWriter] = set()
        self._local: frozenset[str] = frozenset()  # names answered with the rig's own loopback (dev domains)
        # Told of each refusal as it is recorded (the rig's watchers hear of it); never raises into the gate.
        self.on_refused: RefusalListener | None = None

    @property
    def allowlist(self) -> frozenset[str]:
        return frozenset(self._allow)

    def grant(self, hosts: Iterable[str]) -> None:
        self._allow |= validate_patterns(hosts)

    def allowed(self, name: str) -> bool:
        return matches(name, self._allow)

    def _named(self, name: str) -> bool:
        """Allowed by an exact entry the operator or an admin wrote: not only by a ``*.suffix``, and not only by
        the built-in developer baseline (which names public services, never anyone's private network)."""
        host = normalize_host(name)
        return host in self._allow and host not in DEVELOPER_BASELINE

    def set_local_names(self, names: Iterable[str]) -> None:
        """Names (exact, lower case) the resolver answers with ``127.0.0.1``: the rig's dev domains, whose lanes
        listen on its loopback. Replaces the set."""
        self._local = frozenset(n.lower() for n in names)

    def _is_local(self, name: str) -> bool:
        return name in self._local

    def _record(self, kind: str, target: str, allowed: bool, reason: str, rule: str = "", detail: str = "") -> None:
        """``reason`` is what the rig's watchers are told; ``detail``, when given, what only the log keeps."""
        event = EgressEvent(time.time(), kind, target, allowed, reason, rule)
        self.events.append(event)
        level = logging.INFO if allowed else logging.WARNING
        log.log(level, "rig %s egress %s %s %s: %s", self.rig_id, kind, target,
                "allowed" if allowed else "denied", detail or reason)  # fmt: skip
        if not allowed and self.on_refused is not None:
            try:
                self.on_refused(event)
            except Exception:  # a listener's fault must not end the connection being answered
                log.exception("rig %s: telling of an egress refusal failed", self.rig_id)

    async def start(self, make_socket: SocketFactory) -> None:
        p = self.ports
        for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
            if family == socket.AF_INET:
                await self._serve_udp(make_socket, family, (host, p.dns), _DnsProtocol(self))
                await self._serve_tcp(make_socket, family, (host, p.dns), self._dns_tcp)
                await self._serve_tcp(make_socket, family, (host, p.http), self._http)
                await self._serve_tcp(make_socket, family, (host, p.tls), self._tls)
            await self._serve_tcp(make_socket, family, (host, p.deny_tcp), self._deny_tcp)
            await self._serve_udp(make_socket, family, (host, p.deny_udp), _DenyUdpProtocol(self))

    async def _serve_tcp(
        self,
        make_socket: SocketFactory,
        family: int,
        address: tuple[str, int],
        handler: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]],
        *,
        limit: int = 2**16,
    ) -> asyncio.AbstractServer:
        sock = await make_socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind(address)
        sock.listen(128)
        sock.setblocking(False)

        async def guarded(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            if len(self._connections) >= MAX_CONNECTIONS:
                self._refuse_connection(address)
                writer.close()
                return
            task = asyncio.current_task()
            if task is not None:
                self._connections.add(task)
            try:
                await handler(reader, writer)
            except (ConnectionError, TimeoutError, asyncio.IncompleteReadError, OSError):
                pass
            except asyncio.CancelledError:
                # Ended by ``aclose``. Finishing normally instead of cancelled: the stream server's done callback
                # of Python 3.11 asks a cancelled handler for its exception and logs the CancelledError.
                pass
            finally:
                if task is not None:
                    self._connections.discard(task)
                writer.close()

        server = await asyncio.start_server(guarded, sock=sock, limit=limit)
        self._servers.append(server)
        return server

    def _refuse_connection(self, address: tuple[str, int]) -> None:
        now = time.monotonic()
        if now - self._refused_at >= REFUSALS_EVERY_S:
            self._refused_at = now
            target = f"{GATE_ADDRESS}:{address[1]}"
            self._record("tcp", target, False, f"the rig holds {MAX_CONNECTIONS} connections to its gate already",
                         "limit")  # fmt: skip

    async def _serve_udp(
        self, make_socket: SocketFactory, family: int, address: tuple[str, int], protocol: asyncio.DatagramProtocol
    ) -> None:
        sock = await make_socket(family, socket.SOCK_DGRAM)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind(address)
        sock.setblocking(False)
        transport, _ = await asyncio.get_running_loop().create_datagram_endpoint(lambda: protocol, sock=sock)
        self._transports.append(transport)

    async def aclose(self) -> None:
        await self.close_server_door()
        for server in self._servers:
            server.close()
        for transport in self._transports:
            transport.close()
        for task in list(self._tasks):
            task.cancel()
        connections = list(self._connections)
        for connection in connections:
            connection.cancel()
        if connections:  # bounded: closing a socket whose peer stopped reading may wait for its buffer
            await asyncio.wait(connections, timeout=CLOSE_TIMEOUT_S)
        self._servers.clear()
        self._transports.clear()

    # --- DNS -----------------------------------------------------------------------------------------------

    def dns_reply(self, data: bytes) -> bytes | None:
        reply, question = dns.respond(data, self.allowed, GATE_ADDRESS, local=self._is_local)
        if question is not None:
            if self._is_local(question.name):
                self._record("dns", question.name, True, "dev domain (the rig's own loopback)")
            else:
                ok = self.allowed(question.name)
                reason = "allow-listed name" if ok else "name not allow-listed"
                self._record("dns", question.name, ok, reason, "" if ok else "allowlist")
        return reply

    async def _dns_tcp(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            head = await asyncio.wait_for(reader.readexactly(2), READ_TIMEOUT_S)
            query = await asyncio.wait_for(reader.readexactly(struct.unpack("!H", head)[0]), READ_TIMEOUT_S)
            reply = self.dns_reply(query)
            if reply is None:
                return
            writer.write(struct.pack("!H", len(reply)) + reply)
            await writer.drain()

    # --- HTTP and TLS --------------------------------------------------------------------------------------

    async def _upstream(self, name: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """``AddressRefused`` when the name resolves only to addresses rigs may not reach."""
        override = self._overrides.get(f"{name}:{port}")
        if override is not None:
            return await asyncio.wait_for(asyncio.open_connection(*override), CONNECT_TIMEOUT_S)
        return await asyncio.wait_for(connect(name, port, named=self._named(name)), CONNECT_TIMEOUT_S)

    async def _http(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), READ_TIMEOUT_S)
        except asyncio.LimitOverrunError:
            self._record("http", "?", False, "request head too large", "protocol")
            return
        host = host_header(head)
        if host is None:
            self._record("http", "?", False, "no Host header", "protocol")
            writer.write(refusal("a Host header is required"))
            return
        name, _, port = host.partition(":")
        if port not in ("", "80") or not self.allowed(name):
            if port in ("", "80"):
                self._record("http", host, False, "host not allow-listed", "allowlist")
            else:
                self._record("http", host, False, "port not 80", "port")
            writer.write(refusal(f"egress to {host} is not allowed from this rig"))
            return
        try:
            upstream = await self._upstream(name.lower(), 80)
        except AddressRefused as exc:
            self._record("http", name, False, exc.told, "address", detail=exc.reason)
            writer.write(refusal(f"egress to {name} is refused: {exc.told}"))
            return
        except (OSError, TimeoutError) as exc:
            self._record("http", name, False, f"upstream unreachable ({exc.__class__.__name__})", "unreachable")
            writer.write(refusal(f"{name} is unreachable", status=b"502 Bad Gateway"))
            return
        self._record("http", name, True, "allow-listed host")
        upstream[1].write(one_request(head))
        await relay((reader, writer), upstream)

    async def _tls(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await asyncio.wait_for(reader.readexactly(5), READ_TIMEOUT_S)
        try:
            total = sni.record_length(head)
            if total > sni.MAX_HELLO:
                raise sni.NotTls("ClientHello too large")
            record = head + await asyncio.wait_for(reader.readexactly(total - 5), READ_TIMEOUT_S)
            name = sni.server_name(record)
        except sni.NotTls as exc:
            self._record("tls", "?", False, str(exc), "protocol")
            return
        if name is None or not self.allowed(name):
            if name is None:
                self._record("tls", "?", False, "no SNI", "protocol")
            else:
                self._record("tls", name, False, "SNI not allow-listed", "allowlist")
            return
        try:
            upstream = await self._upstream(name.lower(), 443)
        except AddressRefused as exc:  # inside TLS there is no way to say why: the log says it
            self._record("tls", name, False, exc.told, "address", detail=exc.reason)
            return
        except (OSError, TimeoutError) as exc:
            self._record("tls", name, False, f"upstream unreachable ({exc.__class__.__name__})", "unreachable")
            return
        self._record("tls", name, True, "allow-listed SNI")
        upstream[1].write(record)
        await relay((reader, writer), upstream)

    # --- the server door ----------------------------------------------------------------------------------

    async def open_server_door(self, target: server_door.DoorTarget, make_socket: SocketFactory) -> None:
        """Listen on the door port (in the rig's namespace) and pass MCP requests on to ``target``."""
        if self._door_server is not None:
            return
        self._door = target
        if _is_loopback_v4(target.host):
            try:
                self._door_source = loopback.claim()
            except Unavailable:
                log.warning(
                    "rig %s: no loopback address of its own; the server door leaves from 127.0.0.1", self.rig_id
                )
        self._door_server = await self._serve_tcp(
            make_socket, socket.AF_INET, ("127.0.0.1", self.ports.server_door), self._server_door, limit=HEAD_LIMIT
        )
        self._record("server", f"{GATE_ADDRESS}:{self.ports.server_door}", True, "server door opened")

    async def close_server_door(self) -> None:
        """Stop listening and end the exchanges still going through the door."""
        door, self._door_server, self._door = self._door_server, None, None
        source, self._door_source = self._door_source, None
        if source is not None:
            source.release()
        if door is None:
            return
        door.close()
        with contextlib.suppress(ValueError):
            self._servers.remove(door)
        for writer in list(self._door_writers):
            writer.close()
        self._record("server", f"{GATE_ADDRESS}:{self.ports.server_door}", True, "server door closed")

    async def _server_door(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        target = self._door
        if target is None:
            return
        if len(self._door_writers) >= MAX_DOOR_CONNECTIONS:
            why = f"this rig already holds {MAX_DOOR_CONNECTIONS} exchanges with the server open; end one first"
            self._record("server", "?", False, f"{MAX_DOOR_CONNECTIONS} exchanges open", "server")
            await server_door.answer_and_close(reader, writer, refusal(why, b"503 Service Unavailable"))
            return
        self._door_writers.add(writer)
        try:
            await self._through_door(target, reader, writer)
        finally:
            self._door_writers.discard(writer)

    async def _through_door(
        self, target: server_door.DoorTarget, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        async def refuse(what: str, reason: str, answer: bytes) -> None:
            self._record("server", what, False, reason, "server")
            await server_door.answer_and_close(reader, writer, answer)

        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), READ_TIMEOUT_S)
        except asyncio.LimitOverrunError:
            too_large = f"the request head is larger than {HEAD_LIMIT} bytes"
            return await refuse(
                "?", "request head too large", refusal(too_large, b"431 Request Header Fields Too Large")
            )
        try:
            request = server_door.parse_head(head)
        except server_door.Malformed as exc:
            return await refuse(
                "?", f"malformed request ({exc})", refusal(f"malformed request: {exc}", b"400 Bad Request")
            )
        if request.path not in server_door.PATHS:
            path = request.path[:200]
            why = f"{path} is not reachable from this rig: the server door passes only the MCP endpoint, /mcp"
            return await refuse(path, "not the MCP endpoint", refusal(why))
        try:
            source = (self._door_source.address, 0) if self._door_source is not None else None
            connecting = asyncio.open_connection(target.host, target.port, local_addr=source)
            upstream = await asyncio.wait_for(connecting, CONNECT_TIMEOUT_S)
        except (OSError, TimeoutError) as exc:
            reason = f"server unreachable ({exc.__class__.__name__})"
            return await refuse(request.path, reason, refusal("the server is unreachable", b"502 Bad Gateway"))
        self._record("server", request.path, True, "the server's MCP endpoint")
        # Closing the door closes the program's side; ``forward`` then ends the server's side (an idle stream).
        await server_door.forward(request, (reader, writer), upstream, target, READ_TIMEOUT_S)

    # --- everything else -----------------------------------------------------------------------------------

    async def _deny_tcp(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        target = _original_destination(sock) if sock is not None else "?"
        self._record("tcp", target, False, "direct connection outside the gate", "direct")


class _DnsProtocol(asyncio.DatagramProtocol):
    def __init__(self, gate: EgressGate) -> None:
        self.gate = gate
        self.transport: asyncio.DatagramTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.DatagramTransport, transport)

    def datagram_received(self, data: bytes, addr: tuple[str | object, ...]) -> None:
        reply = self.gate.dns_reply(data)
        if reply is not None and self.transport is not None:
            self.transport.sendto(reply, addr)


class _DenyUdpProtocol(asyncio.DatagramProtocol):
    def __init__(self, gate: EgressGate) -> None:
        self.gate = gate

    def datagram_received(self, data: bytes, addr: tuple[str | object, ...]) -> None:
        # the redirect hides the original address of a datagram; the source port identifies the sender
        self.gate._record("udp", f"from port {addr[1]}", False, f"UDP datagram ({len(data)} bytes) dropped", "direct")


def _original_destination(sock: socket.socket) -> str:
    with contextlib.suppress(OSError):
        if sock.family == socket.AF_INET:
            raw = sock.getsockopt(socket.SOL_IP, SO_ORIGINAL_DST, 16)
            return f"{socket.inet_ntop(socket.AF_INET, raw[4:8])}:{struct.unpack('!H', raw[2:4])[0]}"
        raw = sock.getsockopt(socket.IPPROTO_IPV6, SO_ORIGINAL_DST, 28)
        return f"[{socket.inet_ntop(socket.AF_INET6, raw[8:24])}]:{struct.unpack('!H', raw[2:4])[0]}"
    return "?"


def _is_loopback_v4(host: str) -> bool:
    with contextlib.suppress(ValueError):
        address = ipaddress.ip_address(host)
        return address.version == 4 and address.is_loopback
    return host == "localhost"
