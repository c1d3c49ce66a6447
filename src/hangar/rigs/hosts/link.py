"""The server's end of one rig host's socket (``wire``): requests answered by their id, terminal channels, stream
lanes (``streams``: connections into a rig's ports), and the link's end (closed by either side, or silent past
``wire.SILENCE_S``)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.websockets import WebSocket, WebSocketDisconnect

from hangar.core.hostcreds import HostCredential
from hangar.errors import HangarError, InvalidArgs, Refused, Unavailable
from hangar.rigs.backends.capabilities import Pty
from hangar.rigs.hosts import streams, wire

log = logging.getLogger(__name__)

ACK_EVERY = streams.WINDOW // 4  # a terminal's output read since the last ``ptyAck`` before the next is sent


class RemotePty(Pty):
    """A terminal in a rig on a rig host: keystrokes and output as binary frames of its channel. Its output has a
    window as a stream lane's (``streams.WINDOW``): the rig host sends no more than that ahead of what was read
    here (``ptyAck``), so a terminal nobody reads holds at most that much and never stalls the link."""

    def __init__(self, link: HostLink, channel: int) -> None:
        self._link, self.channel = link, channel
        self._out: asyncio.Queue[bytes] = asyncio.Queue()  # bounded by ``held``, at most the window
        self.held = 0  # output received and not yet read
        self._read_unacked = 0
        self.input_credit = streams.Credit()  # keystrokes the rig host may still take before it acknowledges more
        self._closed = False

    def deliver(self, data: bytes) -> None:
        """From the link's reader, which never waits here: output past the window ends the terminal."""
        if self._closed:
            return
        if self.held + len(data) > streams.WINDOW:
            log.warning("rig hosts: %r sent terminal %d output past its window; closing it", self._link.name,
                        self.channel)  # fmt: skip
            self._link.ptys.pop(self.channel, None)
            self.ended()
            return
        self.held += len(data)
        self._out.put_nowait(data)

    def ended(self) -> None:
        """The shell ended or the link went: later reads return ``b""``."""
        if not self._closed:
            self._closed = True
            self._out.put_nowait(b"")
            self.input_credit.close()

    async def read(self) -> bytes:
        if self._closed and self._out.empty():
            return b""
        data = await self._out.get()
        self.held -= len(data)
        self._read_unacked += len(data)
        if self._read_unacked >= ACK_EVERY and not self._closed:
            count, self._read_unacked = self._read_unacked, 0
            with contextlib.suppress(Unavailable):
                await self._link.send_event({"event": "ptyAck", "channel": self.channel, "bytes": count})
        return data

    async def write(self, data: bytes) -> None:
        for start in range(0, len(data), streams.CHUNK):
            piece = data[start : start + streams.CHUNK]
            if self._closed:
                raise Refused("the terminal is closed")
            try:
                await self.input_credit.take(len(piece))  # a shell that does not read holds up this terminal only
            except Unavailable:
                raise Refused("the terminal is closed") from None
            await self._link.send_bytes(wire.frame(self.channel, piece))

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
        self.streams: dict[int, streams.StreamLane] = {}
        self.closed = asyncio.Event()
        self._next = 0
        self._next_stream = streams.SERVER_CHANNELS
        self._abandoned: set[asyncio.Task[None]] = set()
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

    async def open_stream(self, rig_id: str, guest_port: int) -> streams.Streams:
        """A connection to ``guest_port`` inside the rig, carried as a stream lane; the rig host's refusal (nothing
        listens there, a port of the host's own) raised as it said."""
        if not 1 <= guest_port <= 65535:
            raise InvalidArgs("guest_port must be between 1 and 65535", field="guest_port")
        if len(self.streams) >= streams.LANES_MAX:  # the rig host refuses past this too; not trusted to
            raise Refused(f"rig host {self.name!r} carries at most {streams.LANES_MAX} connections into rigs at once")
        self._next_stream += 1
        channel = self._next_stream
        lane = streams.StreamLane(channel, self.send_bytes, self.send_event)
        self.streams[channel] = lane  # before asking: what the rig host sends first waits in the lane
        try:
            await self.call("streamOpen", rig=rig_id, port=guest_port, channel=channel)
            near, far = socket.socketpair()
        except BaseException as exc:
            self.streams.pop(channel, None)
            if not isinstance(exc, HangarError):  # cancelled while asking: the rig host may hold the lane already
                self._abandoned.add(asyncio.create_task(self._abandon(channel)))
            raise
        try:
            lane.start(await asyncio.open_connection(sock=far), lambda: self.streams.pop(channel, None))
            return await asyncio.open_connection(sock=near)
        except BaseException:
            near.close()
            lane.end()
            raise

    async def _abandon(self, channel: int) -> None:
        with contextlib.suppress(HangarError):
            await self.send_event({"event": "streamEnd", "channel": channel})
        self._abandoned.discard(asyncio.current_task())

    async def send_event(self, body: dict[str, Any]) -> None:
        await self._send_text(wire.dumps(body))

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
                        if (lane := self.streams.get(channel)) is not None:
                            lane.deliver(data)
                        elif (pty := self.ptys.get(channel)) is not None:
                            pty.deliver(data)
                        continue
                    if (text := pieces.add(data)) is None:
                        continue  # more pieces of the message come
                body = json.loads(text or "{}")
                if not isinstance(body, dict):
                    raise ValueError(f"a message that is not a JSON object: {text!r:.60}")
                if "re" in body:
                    answer = self._waiting.get(wire.count_of(body, "re"))
                    failed, ok = body.get("error"), body.get("ok") or {}
                    if not isinstance(failed, dict | None) or not isinstance(ok, dict):
                        raise ValueError(f"an answer that is not an object: {text!r:.60}")
                    if answer is not None and not answer.done() and failed is not None:
                        answer.set_exception(wire.error_of(failed))
                    elif answer is not None and not answer.done():
                        answer.set_result(ok)
                elif body.get("event") == "ptyEnd":
                    pty = self.ptys.pop(wire.count_of(body, "channel"), None)
                    if pty is not None:
                        pty.ended()
                elif body.get("event") == "ptyAck":
                    if (pty := self.ptys.get(wire.count_of(body, "channel"))) is not None:
                        pty.input_credit.give(wire.count_of(body, "bytes"))
                elif body.get("event") in streams.EVENTS:
                    if (lane := self.streams.get(wire.count_of(body, "channel"))) is not None:
                        lane.on_event(body)
                elif body.get("event") != "beat":
                    await on_event(body)
        except TimeoutError:
            log.warning("rig hosts: %r said nothing for %.0f s; its link is lost", self.name, wire.SILENCE_S)
        except (WebSocketDisconnect, OSError, ValueError, KeyError, InvalidArgs, RecursionError) as exc:
            # ValueError: malformed JSON, or a message not of the wire's shape (``wire.count_of`` and the checks
            # above name what was wrong); RecursionError: JSON nested past what the parser takes.
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
        for lane in list(self.streams.values()):
            lane.end()
        self.streams.clear()

    async def close(self, code: int, reason: str) -> None:
        self.end()
        with contextlib.suppress(Exception):
            await self.ws.close(code, reason)
