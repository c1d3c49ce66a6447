"""The one connection per process that hears PostgreSQL announce new domain events (LISTEN/NOTIFY).

Every insert into a workspace's ``domain_events`` sends, when its transaction commits, a notification on
``EVENTS_CHANNEL`` naming the workspace's schema and its newest sequence number (``hangar.core.triggers``). An
``EventListener`` keeps one dedicated psycopg 3 connection (autocommit, outside the engines' pool, which would
recycle it) LISTENing on that channel and hands each notification to ``on_notify(schema, seq)``; the event bus
collects them in ``Wakeups`` (a burst becomes one wake-up per workspace) and reads the new rows from the table.

A notification is a wake-up, never the data: PostgreSQL coalesces nothing across transactions but drops every
notification sent while no connection listens. So after each (re)connect, once LISTEN is in place, the listener
calls ``on_connect`` (the bus catches up from its last delivered seq), and a quiet connection is checked every
``heartbeat`` seconds (a dead peer without a closed socket would otherwise be silent forever). A lost connection
is reopened with exponential backoff (``backoff_min`` doubling to ``backoff_max``), logged once when it is lost
and once when it is back, never with the password.

``ChannelListener`` is the same connection for any channel, handing each payload as it came: the step queue's
wake-ups (``hangar.pipelines.stepqueue``) use it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

import psycopg
from sqlalchemy.engine import URL

from hangar.core.dbfailures import first_line_without, secrets_of, shown
from hangar.core.triggers import EVENTS_CHANNEL

log = logging.getLogger(__name__)

OnNotify = Callable[[str, int], None]
OnPayload = Callable[[str], None]
OnConnect = Callable[[], None]

_CONNECT_TIMEOUT_S = 10
# How the connection shows in ``pg_stat_activity`` (an operator tells it from the pool's connections).
APPLICATION_NAME = "hangar events listener"


class Wakeups:
    """What the listener heard since the bus last looked: the highest seq announced per schema, and whether it
    (re)connected, when every workspace is to be read (what committed while nobody listened was announced to
    no one)."""

    def __init__(self) -> None:
        self._heard = asyncio.Event()
        self._woken: dict[str, int] = {}
        self._catch_up = False

    def notified(self, schema: str, seq: int) -> None:
        self._woken[schema] = max(seq, self._woken.get(schema, 0))
        self._heard.set()

    def connected(self) -> None:
        self._catch_up = True
        self._heard.set()

    async def next(self, catch_up_after: float) -> tuple[bool, dict[str, int]]:
        """Wait until something is heard or ``catch_up_after`` seconds pass; then whether to read every workspace
        (after a (re)connect, or the wait's end: the safety catch-up) and the schemas announced, with their newest
        seq."""
        # asyncio.timeout, not wait_for: Python 3.11's wait_for loses a cancellation that arrives as the event is
        # set, and the follower would then wait out a whole catch-up interval before its server could stop.
        try:
            async with asyncio.timeout(catch_up_after):
                await self._heard.wait()
        except TimeoutError:
            self._catch_up = True
        self._heard.clear()
        full, self._catch_up = self._catch_up, False
        woken, self._woken = self._woken, {}
        return full, woken


class ChannelListener:
    """Listens on ``channel`` of the database at ``url`` until ``aclose``, handing each payload to ``on_payload``;
    ``what`` names the notifications in the log, ``meanwhile`` says what stands in for them while they are lost."""

    def __init__(
        self,
        url: URL,
        channel: str,
        on_payload: OnPayload,
        on_connect: OnConnect,
        *,
        what: str,
        meanwhile: str,
        application_name: str,
        heartbeat: float = 5.0,
        backoff_min: float = 0.1,
        backoff_max: float = 5.0,
    ) -> None:
        self._conninfo = url.set(drivername="postgresql").render_as_string(hide_password=False)  # libpq reads it
        self._secrets = secrets_of(url)
        self._target = shown(url)
        self._channel = channel
        self._on_payload = on_payload
        self._on_connect = on_connect
        self._what = what
        self._meanwhile = meanwhile
        self._application_name = application_name
        self.heartbeat = heartbeat
        self.backoff_min = backoff_min
        self.backoff_max = backoff_max
        self.connections = 0  # how many times the connection was opened (the first time included)
        self.failures = 0  # how many times it failed or could not be opened
        self.backend_pid: int | None = None  # the server process of the current connection
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name=f"listen:{self._channel}")

    async def _run(self) -> None:
        delay = self.backoff_min
        lost = False
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(
                    self._conninfo,
                    autocommit=True,
                    connect_timeout=_CONNECT_TIMEOUT_S,
                    application_name=self._application_name,
                ) as conn:
                    await conn.execute(f"LISTEN {self._channel}")
                    self.connections += 1
                    self.backend_pid = conn.info.backend_pid
                    if lost:
                        log.warning("%s from %s are back; catching up", self._what, self._target)
                        lost = False
                    delay = self.backoff_min
                    # Listening before reading: whatever commits from here on is announced, and what committed
                    # while nobody listened is in the table.
                    self._on_connect()
                    await self._listen(conn)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self.backend_pid = None
                self.failures += 1
                if not lost:
                    lost = True
                    log.warning(
                        "%s from %s are not arriving (%s); reconnecting, %s meanwhile",
                        self._what,
                        self._target,
                        self._reason(exc),
                        self._meanwhile,
                    )
                await asyncio.sleep(delay)
                delay = min(delay * 2, self.backoff_max)

    async def _listen(self, conn: psycopg.AsyncConnection[tuple[object, ...]]) -> None:
        while True:
            async for note in conn.notifies(timeout=self.heartbeat):
                self._on_payload(note.payload)
            # Quiet for a heartbeat: prove the connection alive (a notification arriving meanwhile waits in the
            # connection's backlog for the next ``notifies``).
            await conn.execute("SELECT 1")

    def _reason(self, exc: Exception) -> str:
        return first_line_without(exc, self._secrets, limit=300)

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
            self.backend_pid = None


class EventListener(ChannelListener):
    """Listens on ``EVENTS_CHANNEL`` of the database at ``url`` until ``aclose``."""

    def __init__(
        self,
        url: URL,
        on_notify: OnNotify,
        on_connect: OnConnect,
        *,
        heartbeat: float = 5.0,
        backoff_min: float = 0.1,
        backoff_max: float = 5.0,
    ) -> None:
        super().__init__(
            url,
            EVENTS_CHANNEL,
            self._dispatch,
            on_connect,
            what="event notifications",
            meanwhile="events are read at the safety catch-up",
            application_name=APPLICATION_NAME,
            heartbeat=heartbeat,
            backoff_min=backoff_min,
            backoff_max=backoff_max,
        )
        self._on_notify = on_notify

    def _dispatch(self, payload: str) -> None:
        schema, _, seq = payload.partition(" ")
        try:
            top = int(seq)
        except ValueError:
            log.warning("ignored a notification on %s that names no sequence number", EVENTS_CHANNEL)
            return
        self._on_notify(schema, top)
