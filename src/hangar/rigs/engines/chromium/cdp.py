"""A small client of the Chrome DevTools protocol (https://chromedevtools.github.io/devtools-protocol/).

Protocol only: one WebSocket to the browser endpoint, commands answered by id, events fanned out to
subscriptions, page targets reached through flat sessions (``Target.attachToTarget {flatten: true}`` puts the
session id on each message instead of nesting messages). The verbs live in ``session.py`` and its parts.

The socket is dialled at the ``Endpoint``'s host and port (a rig's forward) while the URL keeps the authority
Chromium advertised: Chromium accepts a Host header that is an IP or ``localhost``, and it refuses a WebSocket
carrying an ``Origin`` it was not told to allow, so none is sent. Every failure is translated into the
``hangar.errors`` tree here, in ``_translate`` and ``_gone``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from collections import deque
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

import httpx
import websockets
from websockets.asyncio.client import ClientConnection

from hangar.errors import HangarError, Internal, InvalidArgs, NotFound, Refused, Unavailable
from hangar.rigs.engines.launch import Endpoint

MAX_MESSAGE = 256 * 1024 * 1024  # a full-page screenshot or a large DOM arrives as one base64 message
CALL_TIMEOUT_S = 30.0

Json = dict[str, Any]


class CommandFailed(Refused):
    """The engine answered a command with an error the page caused (a node gone, a context destroyed)."""

    def __init__(self, method: str, code: int, message: str) -> None:
        super().__init__(f"the browser refused {method}: {message}")
        self.method = method
        self.protocol_code = code
        self.protocol_message = message


def _translate(method: str, error: Json) -> HangarError:
    """A protocol error answer as a hangar error: bad parameters are ours to name, a missing node the page's."""
    code = int(error.get("code", 0))
    message = str(error.get("message", "unknown error"))[:500]
    if code == -32601:  # method not found: this client asked for something the engine lacks
        return Internal(f"the browser does not know {method}: {message}")
    if message.startswith(("No node", "Could not find", "No target", "No frame")):  # also under -32602
        return NotFound(f"the browser no longer has what {method} named: {message}")
    if code == -32602:
        return InvalidArgs(f"the browser rejected the parameters of {method}: {message}")
    return CommandFailed(method, code, message)


def _gone(reason: str) -> Unavailable:
    return Unavailable(f"the browser engine went away: {reason}")


@dataclass(frozen=True)
class Event:
    method: str
    params: Json
    session_id: str | None


class Subscription:
    """Events of some methods (on one session, or on any) delivered to a bounded queue, or to a callback.

    A queue drops its oldest event when full: a subscriber that stops reading must not grow memory without
    bound. ``get`` raises ``Unavailable`` once the connection is gone."""

    def __init__(
        self,
        owner: CdpConnection,
        methods: Collection[str],
        session_id: str | None,
        limit: int,
        callback: Callable[[Event], None] | None,
    ) -> None:
        self._owner = owner
        self.methods = frozenset(methods)
        self.session_id = session_id
        self._events: deque[Event] = deque(maxlen=limit)
        self._ready = asyncio.Event()
        self._callback = callback
        self.closed_reason: str | None = None

    def wants(self, event: Event) -> bool:
        return event.method in self.methods and (self.session_id is None or event.session_id == self.session_id)

    def deliver(self, event: Event) -> None:
        if self._callback is not None:
            self._callback(event)
            return
        self._events.append(event)
        self._ready.set()

    def end(self, reason: str) -> None:
        self.closed_reason = reason
        self._ready.set()

    def pending(self) -> Event | None:
        """The oldest waiting event without waiting, or None."""
        if self._events:
            return self._events.popleft()
        if self.closed_reason is not None:
            raise _gone(self.closed_reason)
        return None

    async def get(self, limit_s: float | None = None) -> Event:
        """The next event; ``TimeoutError`` when ``limit_s`` passes first."""
        async with asyncio.timeout(limit_s):
            while True:
                event = self.pending()
                if event is not None:
                    return event
                self._ready.clear()
                await self._ready.wait()

    def close(self) -> None:
        self._owner._subscriptions.discard(self)

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


async def browser_socket_url(endpoint: Endpoint, limit_s: float = 10.0) -> str:
    """The browser target's WebSocket URL from ``/json/version``."""
    url = f"http://{endpoint.host}:{endpoint.port}/json/version"
    try:
        # Plain HTTP to a loopback forward: ``verify=False`` only spares loading the CA store for a TLS context
        # this request never uses (tens of milliseconds on every boot).
        async with httpx.AsyncClient(trust_env=False, verify=False, timeout=limit_s) as client:
            response = await client.get(url, headers={"Host": endpoint.authority})
            response.raise_for_status()
            return str(response.json()["webSocketDebuggerUrl"])
    except (httpx.HTTPError, ValueError, KeyError) as exc:
        raise _gone(f"no DevTools endpoint at {endpoint.authority} ({type(exc).__name__})") from exc


class CdpConnection:
    """One DevTools WebSocket. Open with ``connect``; ``aclose`` is safe to call twice."""

    def __init__(self, socket: ClientConnection) -> None:
        self._socket = socket
        self._ids = itertools.count(1)
        self._pending: dict[int, tuple[str, str | None, asyncio.Future[Json]]] = {}
        self._detached: dict[str, str] = {}  # session id -> why it ended (its target closed or crashed away)
        self._subscriptions: set[Subscription] = set()
        self._closed_reason: str | None = None
        self._reader = asyncio.create_task(self._read(), name="cdp-reader")

    @classmethod
    async def connect(cls, endpoint: Endpoint, limit_s: float = 10.0) -> CdpConnection:
        ws_url = await browser_socket_url(endpoint, limit_s)
        try:
            socket = await websockets.connect(
                ws_url, host=endpoint.host, port=endpoint.port, origin=None, proxy=None,
                compression=None, max_size=MAX_MESSAGE, open_timeout=limit_s, ping_interval=None,
            )  # fmt: skip
        except (OSError, websockets.InvalidHandshake, TimeoutError) as exc:
            raise _gone(f"the DevTools socket did not open ({type(exc).__name__}: {exc})") from exc
        return cls(socket)

    @property
    def closed(self) -> bool:
        return self._closed_reason is not None

    def detached(self, session_id: str) -> bool:
        """Whether the flat session's page closed (its target went away)."""
        return session_id in self._detached

    async def call(
        self, method: str, params: Json | None = None, session_id: str | None = None, limit_s: float = CALL_TIMEOUT_S
    ) -> Json:
        """Send a command and wait for its answer. ``Unavailable`` when the engine is gone or does not answer in
        ``limit_s`` seconds; the protocol's own errors as ``_translate`` maps them."""
        return (await self.call_all([(method, params or {})], session_id, limit_s))[0]

    async def call_all(
        self, commands: Sequence[tuple[str, Json]], session_id: str | None = None, limit_s: float = CALL_TIMEOUT_S
    ) -> list[Json]:
        """Send several commands in order without waiting between them, then wait for every answer (the engine
        runs a session's commands in the order they arrive): one round trip instead of one per command. The
        first failure is raised, as ``call`` would raise it."""
        if self._closed_reason is not None:
            raise _gone(self._closed_reason)
        if session_id in self._detached:
            raise _gone(self._detached[session_id])
        loop = asyncio.get_running_loop()
        sent: list[tuple[int, str, asyncio.Future[Json]]] = []
        waiting = commands[0][0] if commands else ""  # the command whose answer is awaited, for the timeout
        try:
            for method, params in commands:
                call_id = next(self._ids)
                message: Json = {"id": call_id, "method": method, "params": params}
                if session_id is not None:
                    message["sessionId"] = session_id
                future: asyncio.Future[Json] = loop.create_future()
                self._pending[call_id] = (method, session_id, future)
                sent.append((call_id, method, future))
                await self._socket.send(json.dumps(message))
            async with asyncio.timeout(limit_s):
                answers = []
                for _, method, future in sent:
                    waiting = method
                    answers.append(await future)
                return answers
        except websockets.ConnectionClosed as exc:
            raise _gone(f"the DevTools socket closed ({exc})") from exc
        except TimeoutError:
            raise Unavailable(f"the browser did not answer {waiting} within {limit_s:g} s") from None
        finally:
            for call_id, _, future in sent:
                self._pending.pop(call_id, None)
                if future.done() and not future.cancelled():
                    future.exception()  # a later answer's failure is not left unretrieved

    def subscribe(
        self,
        methods: Collection[str],
        session_id: str | None = None,
        *,
        limit: int = 256,
        callback: Callable[[Event], None] | None = None,
    ) -> Subscription:
        """Events named in ``methods`` from now on (of ``session_id`` when given). Close the subscription (or use
        it as a context manager) when done."""
        subscription = Subscription(self, methods, session_id, limit, callback)
        if self._closed_reason is not None:
            subscription.end(self._closed_reason)
        self._subscriptions.add(subscription)
        return subscription

    async def _read(self) -> None:
        reason = "the DevTools socket closed"
        try:
            async for raw in self._socket:
                self._dispatch(json.loads(raw))
        except websockets.ConnectionClosed as exc:
            reason = f"the DevTools socket closed ({exc})"
        except (ValueError, TypeError) as exc:
            reason = f"the browser sent a malformed message ({type(exc).__name__})"
        finally:
            self._finish(reason)

    def _dispatch(self, message: Json) -> None:
        if "id" in message:
            entry = self._pending.get(message["id"])
            if entry is None or entry[2].done():
                return
            method, _, future = entry
            if "error" in message:
                future.set_exception(_translate(method, message["error"]))
            else:
                future.set_result(message.get("result") or {})
            return
        event = Event(str(message.get("method", "")), message.get("params") or {}, message.get("sessionId"))
        if event.method == "Target.detachedFromTarget":
            self._detach(str(event.params.get("sessionId")))
        for subscription in list(self._subscriptions):
            if subscription.wants(event):
                subscription.deliver(event)

    def _detach(self, session_id: str) -> None:
        """The session's page closed: its calls and subscriptions fail now rather than wait for nothing."""
        reason = self._detached[session_id] = "the page was closed"
        for method, pending_session, future in self._pending.values():
            if pending_session == session_id and not future.done():
                future.set_exception(_gone(f"{reason} while waiting for {method}"))
        for subscription in self._subscriptions:
            if subscription.session_id == session_id:
                subscription.end(reason)

    def _finish(self, reason: str) -> None:
        if self._closed_reason is None:
            self._closed_reason = reason
        for method, _, future in self._pending.values():
            if not future.done():
                future.set_exception(_gone(f"{reason} while waiting for {method}"))
        for subscription in self._subscriptions:
            subscription.end(reason)

    async def aclose(self) -> None:
        self._finish("the session was closed")
        await self._socket.close()
        if self._reader is not asyncio.current_task():
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
