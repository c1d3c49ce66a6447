"""The supervisor of one workspace's Socket Mode connection: the spec's chat connection states and moves.

``SlackConnection(api, app_token, clock, on_event, on_state, rand=random.random)``:

- ``start()`` (sync, inside the running loop) moves to ``connecting`` and runs the supervisor task; ``await
  stop()`` ends it, closes the socket and moves to ``disconnected``. A connection in ``error`` stays there until
  the bridge builds a new one with new credentials (the terminal rule); calling ``start()`` again retries.
- ``state`` is ``disconnected | connecting | connected | error``; ``error`` is the ``ChatProviderError`` that put
  it in ``error`` (its ``provider_code`` is the provider's own); ``on_state(state, message)`` is told of every
  move, ``message`` being the error's text in ``error`` and None otherwise.
- ``on_event(event)`` gets every ``InboundMessage`` and ``SlashCommand`` (normalized and deduplicated by
  ``events.EventReader``); for a slash command it returns the ephemeral answer (or None).
- ``last_error`` is the last failure since the connection was last up (a dial the network or the provider
  refused, a dropped socket, a refused credential: its message and when), and ``next_retry_at`` when the next dial
  is due (None while a dial is under way, once connected, and in ``error``). Each failure is one warning line in
  the log (``label`` names the connection there) and is told to ``on_failure`` (None once a socket is greeted
  again), so the owner can keep it across a restart and hand it back as ``last_error`` before ``start()``.

Moves (spec, "Chat connection"):

- dialling: ``auth.test`` with the bot token once (the bot user id the events are read against), then
  ``apps.connections.open`` with the app token, then the socket; ``connected`` on the provider's ``hello``, which
  also resets the backoff;
- the socket drops (closed without a ``disconnect`` message), or a dial fails on the network or with a 5xx ->
  ``connecting``, re-dial after ``backoff_delay(failures)``: exponential from 1 s, full jitter, capped at 30 s;
- the provider rotates the socket (``disconnect`` with ``refresh_requested`` or ``warning``) -> ``connecting``,
  the new socket is opened at once (before the old one is closed) and the backoff is not escalated;
- ``ratelimited`` from ``apps.connections.open`` -> wait its ``Retry-After``, no backoff escalation;
- a refused credential (``errors.TERMINAL_CODES``) from ``apps.connections.open``, ``auth.test`` or any later Web
  API call of ``api``, or ``disconnect`` with ``link_disabled`` (Socket Mode turned off for the app) -> ``error``,
  and no more dials.

Acks: every ``events_api`` envelope is acked as soon as it arrives, before the handler runs (Slack redelivers what
is not acked within 3 s; the event id dedupe drops the copies). A slash command's handler gets up to
``SLASH_ACK_SECONDS`` (wall time: the provider's window is wall time): its answer travels in the ack payload;
a later answer is posted with ``chat.postEphemeral`` and dropped when that fails. A handler that raises is logged
(its kind and event id, never the text) and the connection goes on.

Each socket is its own ``slack_sdk`` websockets ``SocketModeClient`` with ``auto_reconnect_enabled=False``,
subclassed so the SDK never dials by itself (it would re-dial on ``disconnect`` without reading the reason, and
retry forever on a revoked token).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Any, Literal

from slack_sdk.socket_mode.async_client import AsyncBaseSocketModeClient
from slack_sdk.socket_mode.websockets import SocketModeClient

from hangar.chat.connections import Failure
from hangar.chat.errors import TRANSPORT_CODE, ChatProviderError, network_reason
from hangar.chat.inbound import InboundEvent, InboundMessage
from hangar.chat.providers.slack.api import SlackApi
from hangar.chat.providers.slack.events import EventReader, slash_command
from hangar.core.clock import Clock

log = logging.getLogger(__name__)

# The SDK's socket client logs every closed socket as an error and received frames at debug; the supervisor
# reports the moves that matter itself.
SOCKET_LOG = logging.getLogger("hangar.chat.providers.slack.socket")
SOCKET_LOG.setLevel(logging.CRITICAL)

ConnectionState = Literal["disconnected", "connecting", "connected", "error"]

BACKOFF_BASE_SECONDS = 1.0
BACKOFF_CAP_SECONDS = 30.0
DEFAULT_RETRY_AFTER = 30.0  # apps.connections.open is Tier 1: a minute's budget of one
SLASH_ACK_SECONDS = 2.5  # Slack wants the ack within 3 s
ROTATION_REASONS = frozenset({"refresh_requested", "warning"})
LINK_DISABLED = "link_disabled"


def backoff_delay(failures: int, rand: Callable[[], float]) -> float:
    """Full jitter: uniform in [0, min(cap, base * 2**failures)] (``rand()`` is uniform in [0, 1))."""
    ceiling = min(BACKOFF_CAP_SECONDS, BACKOFF_BASE_SECONDS * 2.0 ** min(failures, 16))
    return float(rand()) * ceiling


class _Socket(SocketModeClient):
    """One socket session; tells the supervisor about ``hello``, ``disconnect`` and its end, never re-dials."""

    def __init__(self, app_token: str, api: SlackApi) -> None:
        super().__init__(app_token, logger=SOCKET_LOG, web_client=api.web_client, auto_reconnect_enabled=False)
        self.hello = asyncio.Event()
        self.rotation = asyncio.Event()
        self.disconnect_reason = ""

    async def run_message_listeners(self, message: dict[str, Any], raw_message: str) -> None:
        # The SDK would re-dial here whatever the reason; the supervisor decides instead.
        if message.get("type") == "disconnect":
            self.disconnect_reason = str(message.get("reason") or "")
            self.rotation.set()
            return
        if message.get("type") == "hello":
            self.hello.set()
            return
        await super().run_message_listeners(message, raw_message)

    async def connect_to_new_endpoint(self, force: bool = False) -> None:
        return None

    async def issue_new_wss_url(self) -> str:
        raise RuntimeError("the supervisor asks for socket URLs itself")

    async def wait_closed(self) -> None:
        if self.current_session is not None:
            await self.current_session.wait_closed()


class _Stopped(Exception):
    """The supervisor ends: a terminal error was recorded."""


class SlackConnection:
    def __init__(
        self,
        api: SlackApi,
        app_token: str,
        clock: Clock,
        on_event: Callable[[InboundEvent], Awaitable[str | None]],
        on_state: Callable[[ConnectionState, str | None], None],
        *,
        rand: Callable[[], float] = random.random,
        label: str = "chat connection",
        on_failure: Callable[[Failure | None], None] | None = None,
    ) -> None:
        self._api = api
        self._app_token = app_token
        self._clock = clock
        self._on_event = on_event
        self._on_state = on_state
        self._rand = rand
        self._label = label
        self._on_failure = on_failure
        self.state: ConnectionState = "disconnected"
        self.error: ChatProviderError | None = None
        self.last_error: Failure | None = None
        self.next_retry_at: datetime | None = None
        self.bot_user_id = ""
        self.team_id = ""
        self._reader: EventReader | None = None
        self._task: asyncio.Task[None] | None = None
        self._sockets: set[_Socket] = set()
        self._handlers: set[asyncio.Task[Any]] = set()
        api.terminal_listeners.append(self._refused)

    # --- lifecycle ---

    def start(self) -> None:
        if self._task is not None and not self._task.done():
            return
        self.error = None
        self._move("connecting")
        self._task = asyncio.get_running_loop().create_task(self._supervise(), name="chat-connection")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None and task is not asyncio.current_task():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        for socket in list(self._sockets):
            await self._close(socket)
        for handler in list(self._handlers):
            handler.cancel()
        if self.state != "error":
            self._move("disconnected")

    def _move(self, state: ConnectionState, message: str | None = None) -> None:
        if state == self.state and state != "error":
            return
        self.state = state
        log.info("chat connection: %s", state)
        self._on_state(state, message)

    def _failed(self, message: str, retry_in: float | None) -> None:
        """An attempt failed: remembered with its time and the next dial's, said once in the log."""
        now = self._clock.now()
        self.last_error = Failure(message, now)
        self.next_retry_at = None if retry_in is None else now + timedelta(seconds=retry_in)
        said = message.rstrip(".")
        if retry_in is None:
            log.warning("%s: %s; no more attempts until new credentials are given", self._label, said)
        else:
            log.warning("%s: %s; next attempt in %.1f s", self._label, said, retry_in)
        if self._on_failure is not None:
            self._on_failure(self.last_error)

    def _up(self) -> None:
        """A socket was greeted: what failed before is over."""
        self.next_retry_at = None
        if self.last_error is not None:
            self.last_error = None
            if self._on_failure is not None:
                self._on_failure(None)

    def _refused(self, error: ChatProviderError) -> None:
        """A credential was refused somewhere: ``error``, and the supervisor stops dialling."""
        if self.state == "error":
            return
        self.error = error
        self._failed(str(error), None)
        self._move("error", str(error))
        task = self._task
        if task is not None and task is not asyncio.current_task():
            task.cancel()
        for socket in list(self._sockets):
            asyncio.get_running_loop().create_task(self._close(socket))

    # --- the supervisor ---

    async def _supervise(self) -> None:
        failures = 0
        current: _Socket | None = None
        try:
            while True:
                try:
                    socket = await self._dial()
                except ChatProviderError as e:
                    if e.terminal:
                        self._refused(e)
                        raise _Stopped from None
                    if e.provider_code == "ratelimited":
                        wait = e.retry_after if e.retry_after is not None else DEFAULT_RETRY_AFTER
                        self._failed(str(e), wait)
                        await self._clock.sleep(wait)
                        continue
                    delay = backoff_delay(failures, self._rand)
                    failures += 1
                    self._failed(str(e), delay)
                    await self._clock.sleep(delay)
                    continue
                if current is not None:  # a rotation: the new socket is up, the old one goes
                    await self._close(current)
                current = socket
                rotated = await self._serve(socket)
                if socket.hello.is_set():
                    failures = 0  # a greeted socket ends the failing streak
                if rotated:
                    continue  # promptly, no backoff
                await self._close(socket)
                current = None
                self._move("connecting")
                delay = backoff_delay(failures, self._rand)
                failures += 1
                why = socket.disconnect_reason
                self._failed(f"The provider closed the socket ({why})." if why else "The socket closed.", delay)
                await self._clock.sleep(delay)
        except _Stopped:
            pass
        finally:
            if current is not None:
                await self._close(current)

    async def _dial(self) -> _Socket:
        self.next_retry_at = None  # dialling now
        if self._reader is None:
            identity = await self._api.auth_test()
            self.bot_user_id, self.team_id = identity.bot_user_id, identity.team_id
            self._reader = EventReader(identity.bot_user_id)
        url = await self._api.connections_open(self._app_token)
        socket = _Socket(self._app_token, self._api)
        socket.message_listeners.append(self._listener)
        socket.wss_uri = url
        self._sockets.add(socket)
        try:
            await socket.connect()  # type: ignore[no-untyped-call]  # the SDK leaves it unannotated
        except Exception as e:  # refused, reset, handshake answered with an error status
            await self._close(socket)
            raise ChatProviderError(TRANSPORT_CODE, f"The socket could not be opened ({network_reason(e)}).") from None
        return socket

    async def _serve(self, socket: _Socket) -> bool:
        """Until the socket ends: True for a provider rotation; False for a drop. Raises _Stopped when terminal."""
        hello = asyncio.ensure_future(socket.hello.wait())
        rotation = asyncio.ensure_future(socket.rotation.wait())
        closed = asyncio.ensure_future(socket.wait_closed())
        try:
            await asyncio.wait({hello, rotation, closed}, return_when=asyncio.FIRST_COMPLETED)
            if hello.done() and not rotation.done() and not closed.done():
                self._up()
                self._move("connected")
                await asyncio.wait({rotation, closed}, return_when=asyncio.FIRST_COMPLETED)
            if not rotation.done():
                return False
            reason = socket.disconnect_reason
            if reason == LINK_DISABLED:
                self._refused(
                    ChatProviderError(
                        LINK_DISABLED, "Socket Mode is turned off for this app: turn it on, then reconnect."
                    )
                )
                raise _Stopped
            self._move("connecting")
            if reason in ROTATION_REASONS:
                log.info("chat connection: the provider rotates the socket (%s)", reason)
                return True
            return False  # too_many_websockets or an unknown reason: a drop
        finally:
            for waiter in (hello, rotation, closed):
                waiter.cancel()

    async def _close(self, socket: _Socket) -> None:
        self._sockets.discard(socket)
        with contextlib.suppress(Exception):
            await socket.close()  # type: ignore[no-untyped-call]

    # --- envelopes ---

    async def _listener(self, client: AsyncBaseSocketModeClient, message: dict[str, Any], raw: str | None) -> None:
        kind, envelope_id = message.get("type"), str(message.get("envelope_id") or "")
        payload = message.get("payload")
        if not envelope_id or not isinstance(payload, dict):
            return
        if kind == "slash_commands":
            await self._slash(client, envelope_id, payload)
            return
        await self._ack(client, envelope_id)
        if kind != "events_api" or self._reader is None:
            return
        event = self._reader.message(payload)
        if event is not None:
            await self._handle(event)

    async def _ack(
        self, client: AsyncBaseSocketModeClient, envelope_id: str, payload: dict[str, Any] | None = None
    ) -> None:
        body: dict[str, Any] = {"envelope_id": envelope_id}
        if payload:
            body["payload"] = payload
        try:
            await client.send_socket_mode_response(body)
        except Exception as e:  # the socket went away; the provider redelivers and the dedupe drops the copy
            log.info("chat connection: ack of %s not sent (%s)", envelope_id, type(e).__name__)

    async def _handle(self, event: InboundEvent) -> str | None:
        try:
            return await self._on_event(event)
        except Exception as e:
            ident = event.event_id if isinstance(event, InboundMessage) else event.envelope_id
            log.error("chat event %s (%s) failed in its handler: %s", ident, type(event).__name__, type(e).__name__)
            return None

    async def _slash(self, client: AsyncBaseSocketModeClient, envelope_id: str, payload: dict[str, Any]) -> None:
        command = slash_command(envelope_id, payload)
        # A command the provider sends again (no ack seen in time) carries the same envelope id: acked, not run
        # twice (a second ``ticket`` would file a second ticket).
        if command is None or (self._reader is not None and self._reader.seen_before(f"envelope:{envelope_id}")):
            await self._ack(client, envelope_id)
            return
        task = asyncio.ensure_future(self._handle(command))
        done, _ = await asyncio.wait({task}, timeout=SLASH_ACK_SECONDS)
        if done:
            answer = task.result()
            await self._ack(client, envelope_id, {"response_type": "ephemeral", "text": answer} if answer else None)
            return
        await self._ack(client, envelope_id)
        self._handlers.add(task)
        try:
            answer = await task
        finally:
            self._handlers.discard(task)
        if not answer or not command.channel_id:
            return  # no usable reply handle: dropped
        try:
            await self._api.post_ephemeral(channel=command.channel_id, user=command.user_id, text=answer)
        except ChatProviderError as e:
            log.info("chat connection: late slash command answer dropped (%s)", e.provider_code)
