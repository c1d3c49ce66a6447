"""The live provider connections of this server: at most one per workspace and provider.

The registry does not know how a connection dials: a factory (the provider's transport, injected when the part is
made) builds one from stored credentials and returns it running. Without a factory nothing dials, and the status
says so (``error``, "no transport") instead of claiming to be ``connecting``.

A connection that cannot get through says why: its last failure (the network's or the provider's words, with when)
and when it tries next, so a status never reads ``connecting`` for minutes with nothing said.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, Protocol

from hangar.identity import Workspace

log = logging.getLogger(__name__)

ConnectionState = Literal["disconnected", "connecting", "connected", "error"]
NO_TRANSPORT = "no transport"
START_FAILED = "the connection could not start; see the server log"


@dataclass(frozen=True)
class Failure:
    """An attempt to reach the provider that failed: what the network or the provider said (never a token), and
    when."""

    message: str
    at: datetime


class ChatConnection(Protocol):
    """A running connection to a provider for one workspace, as the status reads and the registry stops it."""

    @property
    def state(self) -> ConnectionState: ...

    @property
    def error(self) -> str | None:
        """The provider's error while ``state`` is ``error`` (never a token)."""

    @property
    def streaming_available(self) -> bool:
        """False once the provider refused streaming on this connection."""

    @property
    def last_error(self) -> Failure | None:
        """The last failure since the connection was last up (None while it is up or never failed)."""

    @property
    def next_retry_at(self) -> datetime | None:
        """When the next attempt is due; None while one is under way, when up, or when no retry will come."""

    async def stop(self) -> None: ...


# Builds and starts a connection from stored credentials; the lead plugs the provider's transport in here.
ConnectionFactory = Callable[[Workspace, str, Mapping[str, str]], Awaitable[ChatConnection]]


class Idle:
    """A connection that never dials: the state it reports says why."""

    def __init__(self, error: str) -> None:
        self._error = error

    @property
    def state(self) -> ConnectionState:
        return "error"

    @property
    def error(self) -> str | None:
        return self._error

    @property
    def streaming_available(self) -> bool:
        return False

    @property
    def last_error(self) -> Failure | None:
        return None

    @property
    def next_retry_at(self) -> datetime | None:
        return None

    async def stop(self) -> None:
        return None


class ConnectionRegistry:
    def __init__(self, factory: ConnectionFactory | None = None) -> None:
        self._factory = factory
        self._live: dict[tuple[str, str], ChatConnection] = {}
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}

    def _lock(self, key: tuple[str, str]) -> asyncio.Lock:
        return self._locks.setdefault(key, asyncio.Lock())

    def get(self, workspace_id: str, provider: str) -> ChatConnection | None:
        return self._live.get((workspace_id, provider))

    async def restart(self, workspace: Workspace, provider: str, credentials: Mapping[str, str]) -> ChatConnection:
        """Stop the workspace's connection if any and start one with ``credentials``."""
        key = (workspace.id, provider)
        async with self._lock(key):
            await self._stop(key)
            conn = await self._start(workspace, provider, credentials)
            self._live[key] = conn
            return conn

    async def _start(self, workspace: Workspace, provider: str, credentials: Mapping[str, str]) -> ChatConnection:
        if self._factory is None:
            return Idle(NO_TRANSPORT)
        try:
            return await self._factory(workspace, provider, credentials)
        except Exception:
            # One workspace's broken start never keeps the others (or the server) from starting.
            log.exception("chat connection of workspace %s (%s) failed to start", workspace.id, provider)
            return Idle(START_FAILED)

    async def stop(self, workspace_id: str, provider: str) -> None:
        key = (workspace_id, provider)
        async with self._lock(key):
            await self._stop(key)

    async def _stop(self, key: tuple[str, str]) -> None:
        conn = self._live.pop(key, None)
        if conn is not None:
            try:
                await conn.stop()
            except Exception:
                log.exception("chat connection of workspace %s (%s) failed to stop", *key)

    async def stop_all(self) -> None:
        for key in list(self._live):
            async with self._lock(key):
                await self._stop(key)
