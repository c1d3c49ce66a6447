"""A small WebDriver BiDi client (https://w3c.github.io/webdriver-bidi/) over ``websockets``, for engine B.

It dials the endpoint's ``host``:``port`` (the rig's forward) while the WebSocket handshake's Host header
carries the guest ``authority``: Firefox's remote agent accepts only its own loopback host and port there.
Commands carry increasing ids and resolve their own future; events go to callbacks registered per method.
Errors become ``hangar.errors`` through ``w3c.errors``; a closed connection fails every pending command with
``Unavailable``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
from collections.abc import Callable
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake

from hangar.errors import InvalidArgs, Unavailable
from hangar.rigs.engines.launch import Endpoint
from hangar.rigs.engines.w3c.errors import EngineTimeout, w3c_error

log = logging.getLogger(__name__)

MAX_MESSAGE_BYTES = 256 * 1024 * 1024  # a full-page screenshot of a long document is large
EventHandler = Callable[[dict[str, Any]], None]


def local_value(value: object) -> dict[str, Any]:
    """A Python value as a BiDi ``LocalValue`` (the arguments of ``script.callFunction``)."""
    if value is None:
        return {"type": "null"}
    if isinstance(value, bool):
        return {"type": "boolean", "value": value}
    if isinstance(value, int | float):
        if isinstance(value, float) and not math.isfinite(value):
            raise InvalidArgs("a script argument must be a finite number")
        return {"type": "number", "value": value}
    if isinstance(value, str):
        return {"type": "string", "value": value}
    if isinstance(value, list | tuple):
        return {"type": "array", "value": [local_value(v) for v in value]}
    if isinstance(value, dict):
        return {"type": "object", "value": [[str(k), local_value(v)] for k, v in value.items()]}
    raise InvalidArgs(f"cannot pass a {type(value).__name__} to a page script")


_SPECIAL_NUMBERS = {"NaN": math.nan, "-0": -0.0, "Infinity": math.inf, "-Infinity": -math.inf}


def python_value(remote: dict[str, Any]) -> Any:
    """A BiDi ``RemoteValue`` as JSON-like Python; a DOM node stays the remote value (it carries ``sharedId``)."""
    kind = remote.get("type")
    value = remote.get("value")
    if kind in ("undefined", "null"):
        return None
    if kind in ("string", "boolean"):
        return value
    if kind == "number":
        return _SPECIAL_NUMBERS.get(value, value) if isinstance(value, str) else value
    if kind == "array":
        return [python_value(v) for v in value or []]
    if kind == "object":
        return {str(k): python_value(v) for k, v in value or [] if isinstance(k, str)}
    return remote


class BidiClient:
    def __init__(self, ws: ClientConnection) -> None:
        self._ws = ws
        self._next_id = 0
        self._pending: dict[int, tuple[str, asyncio.Future[dict[str, Any]]]] = {}
        self._handlers: dict[str, list[EventHandler]] = {}
        self._closed: str | None = None
        self._reader = asyncio.create_task(self._read(), name="bidi-reader")

    @classmethod
    async def connect(cls, endpoint: Endpoint, timeout_s: float = 15.0) -> BidiClient:
        try:
            ws = await connect(
                f"ws://{endpoint.authority}/session", host=endpoint.host, port=endpoint.port, proxy=None,
                open_timeout=timeout_s, max_size=MAX_MESSAGE_BYTES, ping_interval=None, compression=None,
            )  # fmt: skip
        except (OSError, InvalidHandshake, TimeoutError) as exc:
            raise Unavailable(f"cannot reach the browser's WebDriver BiDi endpoint: {exc}") from exc
        return cls(ws)

    @property
    def closed(self) -> bool:
        return self._closed is not None

    def on(self, method: str, handler: EventHandler) -> None:
        self._handlers.setdefault(method, []).append(handler)

    async def call(self, method: str, params: dict[str, Any], timeout_s: float = 30.0) -> dict[str, Any]:
        if self._closed is not None:
            raise Unavailable(f"{method}: the browser connection is closed ({self._closed})")
        self._next_id += 1
        command_id = self._next_id
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[command_id] = (method, future)
        try:
            await self._ws.send(json.dumps({"id": command_id, "method": method, "params": params}))
            return await asyncio.wait_for(future, timeout_s)
        except TimeoutError:
            raise EngineTimeout(f"{method} got no answer in {timeout_s:g} s") from None
        except ConnectionClosed as exc:
            raise Unavailable(f"{method}: the browser connection closed") from exc
        finally:
            self._pending.pop(command_id, None)

    async def _read(self) -> None:
        reason = "the browser closed the connection"
        try:
            async for raw in self._ws:
                message = json.loads(raw)
                if not isinstance(message, dict):
                    continue
                self._dispatch(message)
        except ConnectionClosed:
            pass
        except (ValueError, TypeError) as exc:
            reason = f"the browser sent a malformed message: {exc}"
        finally:
            self._closed = reason
            for method, future in list(self._pending.values()):
                if not future.done():
                    future.set_exception(Unavailable(f"{method}: {reason}"))

    def _dispatch(self, message: dict[str, Any]) -> None:
        command_id = message.get("id")
        if isinstance(command_id, int):
            entry = self._pending.get(command_id)
            if entry is None:
                return  # answered after its caller gave up waiting
            method, future = entry
            if future.done():
                return
            if message.get("type") == "error":
                code, text = str(message.get("error", "unknown error")), str(message.get("message", ""))
                future.set_exception(w3c_error(code, text, method))
            else:
                result = message.get("result")
                future.set_result(result if isinstance(result, dict) else {})
            return
        if message.get("type") == "event":
            params = message.get("params")
            for handler in self._handlers.get(str(message.get("method")), ()):
                try:
                    handler(params if isinstance(params, dict) else {})
                except Exception:  # one bad event must not stop the reader every command depends on
                    log.exception("handling the BiDi event %s failed", message.get("method"))

    async def aclose(self) -> None:
        self._closed = self._closed or "closed by Hangar"
        with contextlib.suppress(Exception):
            await self._ws.close()
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._reader
