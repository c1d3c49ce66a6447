"""The request id: one per RPC call and per HTTP request, carried by ``contextvars`` into whatever the request
starts (a task made while it runs copies the context: a pipeline run and its steps, an agent run, a rig's boot),
so every log line written on its behalf names it (``hangar.server.logs`` stamps each record).

Random, short and meaningless: it names a request in the log and nothing else (never a credential, never an id a
caller could look a record up by)."""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
from collections.abc import Iterator
from contextvars import ContextVar

_REQUEST_ID: ContextVar[str | None] = ContextVar("hangar_request_id", default=None)


class _Ids:
    """Request ids from the system's randomness, drawn 512 at a time: one system call serves that many requests
    (every RPC frame begins one). A forked child starts a pool of its own, so it never repeats its parent's."""

    BATCH = 4096

    def __init__(self) -> None:
        self._pool = b""
        self._at = 0

    def reset(self) -> None:
        self._pool, self._at = b"", 0

    def next(self) -> str:
        if self._at >= len(self._pool):
            self._pool, self._at = secrets.token_bytes(self.BATCH), 0
        at = self._at
        self._at = at + 8
        return self._pool[at : at + 8].hex()


_IDS = _Ids()
os.register_at_fork(after_in_child=_IDS.reset)


def _new_id() -> str:
    return _IDS.next()


def begin_request() -> str:
    """A new request id, current from here on in this task and in every task it creates."""
    rid = _new_id()
    _REQUEST_ID.set(rid)
    return rid


@contextlib.contextmanager
def request_scope() -> Iterator[str]:
    """A new request id for the block only: for a door whose requests run in a task they do not own (the MCP
    SDK's session tasks), where an id set for good would be taken by the session's next request."""
    rid = _new_id()
    token = _REQUEST_ID.set(rid)
    try:
        yield rid
    finally:
        _REQUEST_ID.reset(token)


def current_request_id() -> str | None:
    return _REQUEST_ID.get()


class RequestIdFilter(logging.Filter):
    """Stamps each record with the request id current where it was logged (``None`` outside any request)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = _REQUEST_ID.get()
        return True
