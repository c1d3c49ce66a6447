"""The live provider connections of this server: at most one per workspace and provider.

The registry does not know how a connection dials: a factory (the provider's transport, injected when the part is
made) builds one from stored credentials and returns it running. Without a factory nothing dials, and the status
says so (``error``, "no transport") instead of claiming to be ``connecting``.

A connection that cannot get through says why: its last failure (the network's or the provider's words, with when)
and when it tries next, so a status never reads ``connecting`` for minutes with nothing said.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, Protocol

from hangar.chat.claims import ConnectionClaims
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


# The connections the workspaces want (credentials stored), and a connection's stored credentials (None: gone).
Wanted = Callable[[], Awaitable[list[tuple[Workspace, str]]]]
StoredCredentials = Callable[[Workspace, str], Mapping[str, str] | None]


@dataclass
class _Held:
    """A connection this process holds the claim of: the generation it dialled with, and when (monotonic) its
    last good renewal started."""

    workspace: Workspace
    generation: int
    renewed: float


class ConnectionRegistry:
    """This process's live connections. With ``claims`` (every server; ``hangar.chat.claims``) a connection is
    dialled only while this process holds its claim, and ``watch`` keeps the claims: it renews those held, fences
    (stops) one it could not renew in time or lost, dials again when another process stored new credentials, and
    takes over what no live process holds. Without ``claims`` (unit tests) every restart dials."""

    def __init__(self, factory: ConnectionFactory | None = None, claims: ConnectionClaims | None = None) -> None:
        self._factory = factory
        self.claims = claims
        self._live: dict[tuple[str, str], ChatConnection] = {}
        self._held: dict[tuple[str, str], _Held] = {}
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}
        self._watching: asyncio.Task[None] | None = None

    def _lock(self, key: tuple[str, str]) -> asyncio.Lock:
        return self._locks.setdefault(key, asyncio.Lock())

    def get(self, workspace_id: str, provider: str) -> ChatConnection | None:
        return self._live.get((workspace_id, provider))

    async def restart(
        self, workspace: Workspace, provider: str, credentials: Mapping[str, str]
    ) -> ChatConnection | None:
        """Stop the workspace's connection if any and start one with ``credentials``; with claims, only if this
        process holds (or takes) the claim: when another process holds it, that one is told to dial again with
        the new credentials and None is answered."""
        key = (workspace.id, provider)
        async with self._lock(key):
            await self._stop(key)
            if self.claims is not None:
                generation = await self.claims.claim(workspace.id, provider)
                if generation is None:
                    await self.claims.bump(workspace.id, provider)
                    return None
                self._held[key] = _Held(workspace, generation, time.monotonic())
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
        """The workspace disconnected: this process's connection stops, and whoever holds the claim stops too."""
        key = (workspace_id, provider)
        async with self._lock(key):
            await self._stop(key)
            self._held.pop(key, None)
            if self.claims is not None:
                await self.claims.forget(workspace_id, provider)

    async def _stop(self, key: tuple[str, str]) -> None:
        conn = self._live.pop(key, None)
        if conn is not None:
            try:
                await conn.stop()
            except Exception:
                log.exception("chat connection of workspace %s (%s) failed to stop", *key)

    async def stop_all(self) -> None:
        """This process ends: its connections stop and their claims are let go, for another process to take at
        its next look rather than when the leases run out."""
        watching, self._watching = self._watching, None
        if watching is not None:
            watching.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watching
        for key in list(self._live):
            async with self._lock(key):
                await self._stop(key)
        for key in list(self._held):
            await self._let_go(key)

    async def _let_go(self, key: tuple[str, str]) -> None:
        self._held.pop(key, None)
        if self.claims is not None:
            try:
                await self.claims.release(*key)
            except Exception:  # the lease runs out by itself
                log.exception("chat connection of workspace %s (%s): its claim was not released", *key)

    # -- claims ------------------------------------------------------------------------------------------------

    def start_watching(self, wanted: Wanted, stored: StoredCredentials) -> None:
        self._watching = asyncio.get_running_loop().create_task(self.watch(wanted, stored), name="chat-claims")

    async def watch(self, wanted: Wanted, stored: StoredCredentials) -> None:
        """Keep this process's claims until cancelled: a look every ``claims.renew_every`` seconds."""
        assert self.claims is not None
        while True:
            try:
                await self.look(wanted, stored)
            except Exception:  # the database is away: held connections fence themselves in ``_renew``
                log.exception("chat connections: a look at the claims failed")
            await asyncio.sleep(self.claims.renew_every)

    async def look(self, wanted: Wanted, stored: StoredCredentials) -> None:
        """One look: renew what is held, then take over what the workspaces want and no live process holds."""
        assert self.claims is not None
        for key in list(self._held):
            await self._renew(key, stored)
        for workspace, provider in await wanted():
            key = (workspace.id, provider)
            if key in self._held or await self.claims.read(workspace.id, provider) is not None:
                continue
            credentials = stored(workspace, provider)
            if credentials is None:
                continue
            async with self._lock(key):
                if key in self._held:
                    continue
                generation = await self.claims.claim(workspace.id, provider)
                if generation is None:
                    continue
                log.info("chat connection of workspace %s (%s): taken over by this process", *key)
                self._held[key] = _Held(workspace, generation, time.monotonic())
                self._live[key] = await self._start(workspace, provider, credentials)

    async def _renew(self, key: tuple[str, str], stored: StoredCredentials) -> None:
        assert self.claims is not None
        held = self._held.get(key)
        if held is None:
            return
        async with self._lock(key):
            conn = self._live.get(key)
            started = time.monotonic()
            credentials = stored(held.workspace, key[1])
            try:
                generation = None
                if credentials is not None and conn is not None:
                    state = conn.state
                    generation = await self.claims.renew(
                        *key,
                        state=state,
                        error=conn.error if state == "error" else None,
                        streaming_available=conn.streaming_available,
                    )
            except Exception:
                log.warning("chat connection of workspace %s (%s): its claim could not be renewed", *key, exc_info=True)
                if started - held.renewed < self.claims.fence_after:
                    return
                # The lease may run out before a renewal gets through: stop before another process can dial.
                log.warning("chat connection of workspace %s (%s): its claim could not be renewed; stopped", *key)
                await self._stop(key)
                self._held.pop(key, None)
                return
            if generation is None:
                log.warning("chat connection of workspace %s (%s): no longer held by this process; stopped", *key)
                await self._stop(key)
                self._held.pop(key, None)
                return
            held.renewed = started
            if generation != held.generation and credentials is not None:
                log.info("chat connection of workspace %s (%s): new credentials, dialling again", *key)
                await self._stop(key)
                held.generation = generation
                self._live[key] = await self._start(held.workspace, key[1], credentials)
