"""Connections a process holds, and how long a client may take over a request head (slow-client attacks).

A client that opens connections and sends their request heads a byte at a time (slowloris) holds a descriptor
each for as long as it likes; once the process's descriptors run out the listener can accept nobody and the
server cannot even open a database file. So every listener of the process counts its connections in one
``ConnectionGuard``:

- **in total**: at most ``ConnectionLimits.total``, which is never more than the descriptor limit
  (``RLIMIT_NOFILE``) less a reserve for everything else the server opens (``descriptor_ceiling``);
- **per client address**: at most ``per_address`` from one address (an IPv6 /64 counts as one,
  ``hangar.core.netaddr``). A configured trusted proxy carries everybody's connections, so it is held only to
  the total.

A connection past either cap is answered ``503`` with ``Retry-After`` and closed, nothing it sent read (up to
``LINGER_MAX`` at a time linger ``LINGER_S`` so the answer is not lost to a reset). And a connection waiting for a
request head (a new connection, or a kept-alive one after its last answer) must deliver the whole head within
``head_timeout`` seconds: past it the connection is closed (with a ``408`` when part of a head had arrived). A
WebSocket keeps its place under the caps until it closes.

The caps are enforced by the uvicorn protocols of ``hangar.server.protocols`` (``GuardedHttpProtocol`` and its
WebSocket sibling), which ``hangar.server.listeners`` hands uvicorn in place of its own; they find the guard on their
``GuardedConfig``.
"""

from __future__ import annotations

import asyncio
import logging
import resource
import time
from collections import Counter
from dataclasses import dataclass

from hangar.config import Settings
from hangar.core.netaddr import Network, address_key, in_networks, networks

log = logging.getLogger("hangar.connections")

RESERVE_MIN = 128  # descriptors kept for databases, logs, pipes and rigs whatever the limit
RESERVE_SHARE = 4  # ... and at least this share of the limit (a quarter)
LOG_EVERY_S = 10.0  # refusals are logged at most this often (with how many there were), never one line each
# A refused connection's request may already be on its way; closing with it unread would reset the connection and
# could lose the 503. So a few refused connections at a time are closed gently (the answer, then our side's end,
# then whatever the client still sends is read and dropped for up to a second); past that they are closed at once.
LINGER_S = 1.0
LINGER_MAX = 64


def descriptor_ceiling(soft_limit: int | None = None) -> int:
    """Connections the process may hold at most: its descriptor limit less the reserve."""
    if soft_limit is None:
        soft_limit, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft_limit == resource.RLIM_INFINITY or soft_limit < 0:
        soft_limit = 1 << 20
    return max(1, soft_limit - max(RESERVE_MIN, soft_limit // RESERVE_SHARE))


@dataclass(frozen=True)
class ConnectionLimits:
    total: int
    per_address: int
    head_timeout: float
    trusted_proxies: tuple[Network, ...] = ()

    @classmethod
    def from_settings(cls, settings: Settings) -> ConnectionLimits:
        ceiling = descriptor_ceiling()
        wanted = settings.max_connections or ceiling
        if wanted > ceiling:
            log.warning(
                "max connections %d is above what the descriptor limit allows; holding %d (raise `ulimit -n`)",
                wanted,
                ceiling,
            )
        return cls(
            total=min(wanted, ceiling),
            per_address=settings.max_connections_per_address,
            head_timeout=settings.request_head_timeout,
            trusted_proxies=networks(settings.trusted_proxies),
        )


def closing_answer(status: str, message: str, extra: str = "") -> bytes:
    body = message.encode()
    head = (
        f"HTTP/1.1 {status}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {len(body)}\r\n"
        f"{extra}connection: close\r\n\r\n"
    )
    return head.encode() + body


REFUSED = closing_answer("503 Service Unavailable", "too many connections; try again shortly\n", "retry-after: 5\r\n")
TOO_SLOW = closing_answer("408 Request Timeout", "the request head took too long\n")


class _Throttled:
    """One log line per ``LOG_EVERY_S`` for a kind of event, saying how many happened since the last."""

    def __init__(self, what: str) -> None:
        self.what = what
        self._count = 0
        self._last = -LOG_EVERY_S

    def note(self, detail: str) -> None:
        self._count += 1
        now = time.monotonic()
        if now - self._last >= LOG_EVERY_S:
            log.warning("%s: %d since the last report (latest: %s)", self.what, self._count, detail)
            self._count = 0
            self._last = now


class ConnectionGuard:
    """The open connections of every listener of the process, by client address."""

    def __init__(self, limits: ConnectionLimits) -> None:
        self.limits = limits
        self._open: dict[asyncio.BaseTransport, str | None] = {}  # transport -> its address key (None: a proxy)
        self._per_key: Counter[str] = Counter()
        self._refusals = _Throttled("connections refused")
        self._slow = _Throttled("slow request heads closed")
        self.lingering = 0

    @property
    def open(self) -> int:
        return len(self._open)

    def held_by(self, host: str) -> int:
        return self._per_key[address_key(host)]

    def admit(self, transport: asyncio.BaseTransport) -> bool:
        """Count the connection in, or refuse it (False) when a cap is full."""
        peer = transport.get_extra_info("peername")
        host = str(peer[0]) if isinstance(peer, tuple) and peer else ""
        key = None if in_networks(host, self.limits.trusted_proxies) else address_key(host)
        if len(self._open) >= self.limits.total:
            self._refusals.note(f"{host}: the total of {self.limits.total} is reached")
            return False
        if key is not None and self._per_key[key] >= self.limits.per_address:
            self._refusals.note(f"{key} holds its {self.limits.per_address}")
            return False
        self._open[transport] = key
        if key is not None:
            self._per_key[key] += 1
        return True

    def release(self, transport: asyncio.BaseTransport) -> None:
        """Count the connection out (once, whichever protocol saw it end)."""
        if transport not in self._open:
            return
        key = self._open.pop(transport)
        if key is not None:
            self._per_key[key] -= 1
            if self._per_key[key] <= 0:
                del self._per_key[key]

    def slow_head(self, host: str) -> None:
        self._slow.note(host)
