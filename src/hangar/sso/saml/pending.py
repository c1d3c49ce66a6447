"""Requests we sent and assertions we accepted, remembered just long enough to refuse replays.

``PendingRequests`` holds every AuthnRequest id we issued with what the login started with (relay, client
origin). ``take`` removes it, so an ``InResponseTo`` is honoured once; entries expire after ``ttl``.
``SeenAssertions`` remembers accepted assertion ids until the assertion itself expires, so the same signed
assertion posted twice (an unsolicited one in particular, which has no request to use up) is refused.

Both live in memory: a restart forgets pending logins, which only means those people sign in again. Both
are bounded so that a flood of ``/saml/login`` requests cannot grow them without limit (oldest go first).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime, timedelta

from hangar.core.clock import Clock

DEFAULT_TTL = timedelta(minutes=10)
MAX_PENDING = 10_000
MAX_SEEN = 100_000


@dataclass(frozen=True)
class PendingRequest:
    id: str
    relay: str | None
    client_origin: str | None
    created_at: datetime
    expires_at: datetime


class PendingRequests:
    def __init__(self, clock: Clock, *, ttl: timedelta = DEFAULT_TTL, capacity: int = MAX_PENDING) -> None:
        self._clock = clock
        self._ttl = ttl
        self._capacity = capacity
        self._items: OrderedDict[str, PendingRequest] = OrderedDict()
        self._lock = threading.Lock()

    def add(self, request_id: str, *, relay: str | None = None, client_origin: str | None = None) -> PendingRequest:
        now = self._clock.now()
        item = PendingRequest(request_id, relay, client_origin, now, now + self._ttl)
        with self._lock:
            self._purge(now)
            self._items[request_id] = item
            while len(self._items) > self._capacity:
                self._items.popitem(last=False)
        return item

    def peek(self, request_id: str) -> PendingRequest | None:
        """The live pending request, without using it up."""
        now = self._clock.now()
        with self._lock:
            item = self._items.get(request_id)
            if item is None or item.expires_at <= now:
                return None
            return item

    def take(self, request_id: str) -> PendingRequest | None:
        """Use up the pending request: the first caller gets it, every later one gets None."""
        now = self._clock.now()
        with self._lock:
            item = self._items.pop(request_id, None)
        if item is None or item.expires_at <= now:
            return None
        return item

    def __len__(self) -> int:
        return len(self._items)

    def _purge(self, now: datetime) -> None:
        while self._items:
            first = next(iter(self._items.values()))
            if first.expires_at > now:
                break
            self._items.popitem(last=False)


class SeenAssertions:
    def __init__(self, clock: Clock, *, capacity: int = MAX_SEEN) -> None:
        self._clock = clock
        self._capacity = capacity
        self._items: OrderedDict[str, datetime] = OrderedDict()
        self._lock = threading.Lock()

    def seen(self, key: str) -> bool:
        now = self._clock.now()
        with self._lock:
            until = self._items.get(key)
            return until is not None and until > now

    def remember(self, key: str, until: datetime) -> bool:
        """Record ``key`` until ``until``; False when it was already recorded (a replay)."""
        now = self._clock.now()
        with self._lock:
            old = self._items.get(key)
            if old is not None and old > now:
                return False
            self._items[key] = until
            self._items.move_to_end(key)
            if len(self._items) > self._capacity:
                # Drop expired entries first; if still full, the oldest accepted go.
                for k in [k for k, t in self._items.items() if t <= now]:
                    del self._items[k]
                while len(self._items) > self._capacity:
                    self._items.popitem(last=False)
            return True
