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
from hangar.core.dbfailures import Paused, is_connection_loss
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
        self._watching: list[asyncio.Task[None]] = []

    def _lock(self, key: tuple[str, str]) -> asyncio.Lock:
        return self._locks.setdefault(key, asyncio.Lock())

    def get(self, workspace_id: str, provider: str) -> ChatConnection | None:
        return self._live.get((workspace_id, provider))

    async def restart(
        self, workspace: Workspace, provider: str, credentials: Mapping[str, str], *, new_credentials: bool = True
    ) -> ChatConnection | None:
        """Stop the workspace's connection if any and start one with ``credentials``; with claims, only if this
        process holds (or takes) the claim: when another process holds it, None is answered, and that process
        is told to dial again when these are ``new_credentials`` (not at a start, which only found them)."""
        key = (workspace.id, provider)
        async with self._lock(key):
            await self._stop(key)
            if self.claims is not None:
                generation = await self.claims.claim(workspace.id, provider)
                if generation is None:
                    if new_credentials:
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
        watching, self._watching = self._watching, []
        for task in watching:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
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
        """Keep this process's claims until ``stop_all``: renewals and take-overs in loops of their own, so a slow
        start of a connection taken over never delays a renewal."""
        loop = asyncio.get_running_loop()
        self._watching = [
            loop.create_task(self._every_look(lambda: self.renew_all(stored)), name="chat-claims-renew"),
            loop.create_task(self._every_look(lambda: self.take_over(wanted, stored)), name="chat-claims-take"),
        ]

    async def _every_look(self, look: Callable[[], Awaitable[None]]) -> None:
        assert self.claims is not None
        paused = Paused("chat connections' claims", log)
        while True:
            try:
                await look()
            except Exception as exc:  # the database is away: held connections fence themselves in ``_renew``
                if not paused.failed(exc):
                    log.exception("chat connections: a look at the claims failed")
            else:
                paused.ok()
            await asyncio.sleep(self.claims.renew_every)

    async def renew_all(self, stored: StoredCredentials) -> None:
        for key in list(self._held):
            await self._renew(key, stored)

    async def take_over(self, wanted: Wanted, stored: StoredCredentials) -> None:
        """Take the connections the workspaces want (credentials stored) that no live process holds."""
        assert self.claims is not None
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
        """Renew one claim. The holder fences itself: a renewal not through by 2/3 of the lease after the start
        of the last good one (or one failing when the next look would come later than that) stops the
        connection, before the lease can run out and another process dial."""
        assert self.claims is not None
        held = self._held.get(key)
        if held is None:
            return
        fence_at = held.renewed + self.claims.fence_after
        async with self._lock(key):
            conn = self._live.get(key)
            started = time.monotonic()
            credentials = stored(held.workspace, key[1])
            try:
                generation = None
                if credentials is not None and conn is not None:
                    state = conn.state
                    async with asyncio.timeout(max(0.0, fence_at - started)):
                        generation = await self.claims.renew(
                            *key,
                            state=state,
                            error=conn.error if state == "error" else None,
                            streaming_available=conn.streaming_available,
                        )
            except Exception as exc:
                # The database away is said in a line (the loss is no bug); anything else with its traceback.
                log.warning(
                    "chat connection of workspace %s (%s): its claim could not be renewed",
                    *key,
                    exc_info=not is_connection_loss(exc),
                )
                if time.monotonic() + self.claims.renew_every < fence_at:
                    return  # another try comes before the fence
                log.warning("chat connection of workspace %s (%s): stopped until its claim can be renewed", *key)
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
