"""The server's end of one rig host's socket (``wire``): requests answered by their id, terminal channels, and
the link's end (closed by either side, or silent past ``wire.SILENCE_S``)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.websockets import WebSocket, WebSocketDisconnect

from hangar.core.hostcreds import HostCredential
from hangar.errors import InvalidArgs, Refused, Unavailable
from hangar.rigs.backends.capabilities import Pty
from hangar.rigs.hosts import wire

log = logging.getLogger(__name__)

PTY_QUEUE = 256  # output chunks a terminal may fall behind by before the link waits for it


class RemotePty(Pty):
    """A terminal in a rig on a rig host: keystrokes and output as binary frames of its channel."""

    def __init__(self, link: HostLink, channel: int) -> None:
        self._link, self.channel = link, channel
        self._out: asyncio.Queue[bytes] = asyncio.Queue(PTY_QUEUE)
        self._closed = False

    async def deliver(self, data: bytes) -> None:
        if not self._closed:
            await self._out.put(data)

    def ended(self) -> None:
        """The shell ended or the link went: later reads return ``b""``."""
        if not self._closed:
            self._closed = True
            with contextlib.suppress(asyncio.QueueFull):
                self._out.put_nowait(b"")

    async def read(self) -> bytes:
        if self._closed and self._out.empty():
            return b""
        return await self._out.get()

    async def write(self, data: bytes) -> None:
        if self._closed:
            raise Refused("the terminal is closed")
        for one in wire.terminal_frames(self.channel, data):
            await self._link.send_bytes(one)

    async def resize(self, cols: int, rows: int) -> None:
        if not (1 <= cols <= 1000 and 1 <= rows <= 1000):
            raise InvalidArgs("a terminal is 1x1 to 1000x1000")
        await self._link.call("ptyResize", channel=self.channel, cols=cols, rows=rows)

    async def aclose(self) -> None:
        if self._closed:
            return
        self.ended()
        self._link.ptys.pop(self.channel, None)
        with contextlib.suppress(Unavailable):
            await self._link.call("ptyClose", channel=self.channel)


class HostLink:
    """One connection of a rig host (the credential it proved, the budget and rigs its hello said)."""

    def __init__(self, ws: WebSocket, credential: HostCredential, budget_mb: int, rigs: frozenset[str]) -> None:
        self.ws = ws
        self.credential = credential
        self.budget_mb = budget_mb
        self.rigs = rigs
        self.ptys: dict[int, RemotePty] = {}
        self.closed = asyncio.Event()
        self._next = 0
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._send_lock = asyncio.Lock()

    @property
    def host_id(self) -> str:
        return self.credential.id

    @property
    def name(self) -> str:
        return self.credential.name

    async def call(self, op: str, **args: Any) -> dict[str, Any]:
        """Ask the rig host to do ``op`` and return its answer; its error raised as the error its code names,
        ``Unavailable`` when the link ends first."""
        if self.closed.is_set():
            raise Unavailable(f"rig host {self.name!r} is not connected")
        self._next += 1
        rid = self._next
        answer: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[rid] = answer
        try:
            await self._send_text(wire.dumps({"id": rid, "op": op, **args}))
            return await answer
        finally:
            self._waiting.pop(rid, None)

    async def open_pty(self, rig_id: str, cols: int, rows: int) -> RemotePty:
        channel = int((await self.call("ptyOpen", rig=rig_id, cols=cols, rows=rows))["channel"])
        pty = RemotePty(self, channel)
        self.ptys[channel] = pty
        return pty

    async def _send_text(self, text: str) -> None:
        """Send a text message, in pieces when it is long (``wire.message_frames``), one after the other."""
        async with self._send_lock:
            try:
                for one in wire.message_frames(text):
                    if isinstance(one, str):
                        await self.ws.send_text(one)
                    else:
                        await self.ws.send_bytes(one)
            except (WebSocketDisconnect, RuntimeError, OSError) as exc:
                self.end()
                raise Unavailable(f"rig host {self.name!r} is not connected") from exc

    async def send_bytes(self, data: bytes) -> None:
        async with self._send_lock:
            try:
                await self.ws.send_bytes(data)
            except (WebSocketDisconnect, RuntimeError, OSError) as exc:
                self.end()
                raise Unavailable(f"rig host {self.name!r} is not connected") from exc

    async def serve(self, on_event: Callable[[dict[str, Any]], Awaitable[None]]) -> None:
        """Read the rig host's frames until the link ends: answers to their requests, terminal output to their
        channels, events to ``on_event``. Silence past ``wire.SILENCE_S`` ends the link."""
        pieces = wire.Pieces()
        try:
            while not self.closed.is_set():
                message = await asyncio.wait_for(self.ws.receive(), wire.SILENCE_S)
                if message["type"] == "websocket.disconnect":
                    return
                text = message.get("text")
                if message.get("bytes") is not None:
                    channel, data = wire.unframe(message["bytes"])
                    if channel != wire.PART_CHANNEL:
                        pty = self.ptys.get(channel)
                        if pty is not None:
                            await pty.deliver(data)
                        continue
                    if (text := pieces.add(data)) is None:
                        continue  # more pieces of the message come
                body = json.loads(text or "{}")
                if "re" in body:
                    answer = self._waiting.get(int(body["re"]))
                    if answer is not None and not answer.done():
                        if "error" in body:
                            answer.set_exception(wire.error_of(body["error"]))
                        else:
                            answer.set_result(dict(body.get("ok") or {}))
                elif body.get("event") == "ptyEnd":
                    pty = self.ptys.pop(int(body["channel"]), None)
                    if pty is not None:
                        pty.ended()
                elif body.get("event") != "beat":
                    await on_event(body)
        except TimeoutError:
            log.warning("rig hosts: %r said nothing for %.0f s; its link is lost", self.name, wire.SILENCE_S)
        except (WebSocketDisconnect, OSError, ValueError, KeyError, InvalidArgs) as exc:
            log.warning("rig hosts: the link of %r ended: %s", self.name, exc)
        finally:
            self.end()

    def end(self) -> None:
        """The link is over: every request waiting fails, every terminal ends."""
        if self.closed.is_set():
            return
        self.closed.set()
        for answer in self._waiting.values():
            if not answer.done():
                answer.set_exception(Unavailable(f"rig host {self.name!r} was disconnected"))
        for pty in self.ptys.values():
            pty.ended()
        self.ptys.clear()

    async def close(self, code: int, reason: str) -> None:
        self.end()
        with contextlib.suppress(Exception):
            await self.ws.close(code, reason)
