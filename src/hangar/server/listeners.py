"""Running uvicorn listeners side by side in one event loop (the server and its website).

Every listener of a process answers to one ``ConnectionGuard`` (``hangar.server.connections``: connection caps
and the request-head deadline). Proxy headers (``X-Forwarded-For``, ``X-Forwarded-Proto``) are honoured only from
the trusted proxies the guard's limits name, never by uvicorn's default of trusting any loopback client: a
client's address is what attempt limits key on, and a header anyone can send must not choose it.

``hangar serve`` and ``hangar site`` bind their ports first (``bind_port``), before any app starts: a port that
cannot be had (in use, privileged, an address this machine lacks) is one ``PortUnavailable`` naming it, which
the command line says in one line, instead of uvicorn's exit from inside a running event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import signal
import socket
from collections.abc import Callable, Coroutine, Generator, Sequence
from dataclasses import dataclass
from typing import Any

import uvicorn
from starlette.types import ASGIApp

from hangar.rpc.endpoint import MAX_FRAME_BYTES
from hangar.server import protocols
from hangar.server.connections import ConnectionGuard
from hangar.server.protocols import GuardedConfig


class _Server(uvicorn.Server):
    """Signals are handled once for all listeners by ``serve_all``, not by each server."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


# Work a server does beside its listeners (``serve_all``'s ``background``).
BackgroundJob = Callable[[], Coroutine[Any, Any, None]]

GRACEFUL_STOP_S = 5


class PortUnavailable(Exception):
    """A listener's port cannot be had: ``reason`` says why in words, naming the port; ``remedy(option)`` says
    what to do, ``option`` being how the command chooses another port (``--port PORT``)."""

    def __init__(self, reason: str, kind: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.kind = kind  # "inUse", "privileged", "host" or "other"

    def remedy(self, option: str) -> str:
        if self.kind == "inUse":
            return f"stop what listens there, or choose another port with {option}"
        if self.kind == "privileged":
            return f"run as root, or choose a port above 1023 with {option}"
        if self.kind == "host":
            return "give --host an address of this machine (127.0.0.1; 0.0.0.0 for all of them)"
        return f"choose another port with {option}"


def bind_port(host: str, port: int) -> list[socket.socket]:
    """Sockets bound to ``port`` on every address ``host`` names (as uvicorn would bind them: address reuse on,
    an IPv6 socket for IPv6 only), not listening yet. ``port`` 0 takes a free port, the same on every address.
    Raises ``PortUnavailable`` naming the port when it cannot be had."""
    shown = f"[{host}]" if ":" in host else host
    try:
        found = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror:
        raise PortUnavailable(f"{host!r} is not a host name or address this machine resolves", "host") from None
    addresses = list(dict.fromkeys((family, addr) for family, _t, _p, _c, addr in found))
    bound: list[socket.socket] = []
    try:
        for family, addr in addresses:
            sock = socket.socket(family, socket.SOCK_STREAM)
            bound.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind((addr[0], port, *addr[2:]))
            sock.set_inheritable(True)
            port = port or int(sock.getsockname()[1])
    except OSError as exc:
        for sock in bound:
            sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise PortUnavailable(f"port {port} on {shown} is already in use", "inUse") from None
        if exc.errno == errno.EACCES:
            raise PortUnavailable(f"port {port} on {shown} is privileged (below 1024)", "privileged") from None
        if exc.errno == errno.EADDRNOTAVAIL:
            raise PortUnavailable(f"{shown} is not an address of this machine (port {port})", "host") from None
        raise PortUnavailable(f"port {port} on {shown} cannot be bound: {exc.strerror}", "other") from None
    return bound


@dataclass
class Listener:
    name: str
    app: ASGIApp
    host: str
    port: int
    guard: ConnectionGuard
    server: _Server | None = None
    # Bound beforehand (``bind_port``); None: uvicorn binds ``host`` and ``port`` itself when it starts.
    sockets: list[socket.socket] | None = None

    def config(self) -> GuardedConfig:
        trusted = [str(net) for net in self.guard.limits.trusted_proxies]
        return GuardedConfig(
            self.app,
            guard=self.guard,
            host=self.host,
            port=self.port,
            # HTTP is uvicorn's httptools protocol with the head bounds of hangar.server.protocols, WebSocket its
            # sans-I/O websockets one; both under the guard.
            ws_max_size=MAX_FRAME_BYTES,
            timeout_keep_alive=protocols.KEEP_ALIVE_S,  # read at each start: tests shorten it
            ws_ping_interval=20.0,
            proxy_headers=bool(trusted),
            forwarded_allow_ips=trusted or None,
            # RPC frames are small JSON; compressing each costs more CPU than the bytes it saves on loopback/LAN.
            ws_per_message_deflate=False,
            log_level="warning",
            # Per-request work the server need not do: an access log nobody reads at this level, and a Server
            # header clients do not use. (Date stays: an origin server with a clock must send it.)
            access_log=False,
            server_header=False,
            lifespan="on",
            # Long-lived answers (MCP event streams, listen streams, lanes) would otherwise hold a graceful stop
            # open until each client leaves; past this, uvicorn cancels them and the shutdown hooks run.
            timeout_graceful_shutdown=GRACEFUL_STOP_S,
        )

    def make(self) -> _Server:
        self.server = _Server(self.config())
        return self.server

    @property
    def bound_port(self) -> int:
        assert self.server is not None and self.server.servers
        sock = self.server.servers[0].sockets[0]
        return int(sock.getsockname()[1])

    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.bound_port}"


def run_listeners(listeners: Sequence[Listener], background: Sequence[BackgroundJob] = ()) -> None:
    """Run ``serve_all`` on uvloop when it is installed (it comes with uvicorn[standard])."""
    factory: Callable[[], asyncio.AbstractEventLoop] = asyncio.new_event_loop
    try:
        import uvloop

        factory = uvloop.new_event_loop
    except ImportError:  # pragma: no cover - uvloop is a dependency on Linux
        pass
    with asyncio.Runner(loop_factory=factory) as runner:
        runner.run(serve_all(listeners, background=background))


async def serve_all(
    listeners: Sequence[Listener], announce: bool = True, background: Sequence[BackgroundJob] = ()
) -> None:
    """Serve every listener until a signal; ``background`` jobs start once all listen and are cancelled when
    they stop (work the server's first start does without holding up its listeners)."""
    servers = [listener.make() for listener in listeners]
    tasks = [
        asyncio.create_task(s.serve(sockets=listener.sockets)) for s, listener in zip(servers, listeners, strict=True)
    ]
    jobs: list[asyncio.Task[None]] = []
    loop = asyncio.get_running_loop()

    def stop() -> None:
        for s in servers:
            s.should_exit = True

    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop)
    while not all(s.started for s in servers):
        if any(t.done() for t in tasks):
            stop()
            break
        await asyncio.sleep(0.02)
    else:
        if announce:
            for listener in listeners:
                print(f"{listener.name}: {listener.url()}", flush=True)
        jobs = [asyncio.create_task(job()) for job in background]
    results = await asyncio.gather(*tasks, return_exceptions=True)
    for job in jobs:
        job.cancel()
    await asyncio.gather(*jobs, return_exceptions=True)
    for r in results:
        if isinstance(r, BaseException):
            raise r
    if any(not s.started for s in servers):
        raise SystemExit(1)
