"""Stream lanes: one TCP connection into a rig on a rig host (a port forward's, a dev domain's), carried over the
host's link (``wire``) as a channel of its own, with flow control.

Each end holds one ``StreamLane`` per connection and relays it to a stream connection of its own: on the server,
the person's connection to the forward; on the rig host, the guest's port (``RigHandle.connect``). The server
opens a lane with the request ``streamOpen {rig, port, channel}``, naming a channel from its own range
(``SERVER_CHANNELS`` and up, so it never meets the rig host's terminal and file channels) and registering it
before it asks, so nothing the rig host sends first is lost. Then, both ways:

- binary frames of the channel carry the bytes, at most ``CHUNK`` each;
- ``{"event": "streamAck", "channel": k, "bytes": n}``: the receiver wrote ``n`` bytes to its socket;
- ``{"event": "streamEof", "channel": k}``: the sender's side finished (passed on as a half-close);
- ``{"event": "streamEnd", "channel": k}``: the lane is over both ways (a reset, a forward removed, a rig closed).

Flow control: a sender keeps at most ``WINDOW`` bytes sent and not acknowledged, so what a receiver holds for one
lane never passes ``WINDOW`` (the per-lane bound). A sender that overruns it has its lane ended (the link goes
on). The link's reader only hands bytes to a lane, never waits on one: a lane whose reader is slow stalls itself,
not the terminals, requests and other lanes beside it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from hangar.errors import HangarError, Unavailable
from hangar.rigs.hosts.wire import count_of

log = logging.getLogger(__name__)

WINDOW = 256 * 1024  # bytes of one direction of one lane in flight (sent, not yet acknowledged)
CHUNK = 64 * 1024  # bytes in one frame of a lane
SERVER_CHANNELS = 1 << 31  # lanes' channels, chosen by the server, start here (the rig host's count up from 1)
LANES_MAX = 256  # stream lanes one link carries at once; the rig host refuses another ``streamOpen``

EVENTS = frozenset({"streamAck", "streamEof", "streamEnd"})

Streams = tuple[asyncio.StreamReader, asyncio.StreamWriter]
SendFrame = Callable[[bytes], Awaitable[None]]
SendEvent = Callable[[dict[str, Any]], Awaitable[None]]


class Credit:
    """What a sender may still send on one channel before the receiver acknowledges more (``WINDOW`` at first):
    a stream lane's, or a terminal's output (``ptyAck``)."""

    def __init__(self) -> None:
        self.left = WINDOW
        self._given = asyncio.Event()
        self._closed = False

    def give(self, count: int) -> None:
        self.left += count
        self._given.set()

    def close(self) -> None:
        """The channel ended: a sender waiting, and any later one, gets ``Unavailable``."""
        self._closed = True
        self._given.set()

    async def take(self, count: int) -> None:
        """Wait until ``count`` bytes (at most ``WINDOW``) may be sent, and count them sent."""
        while self.left < count:
            if self._closed:
                raise Unavailable("the channel ended")
            self._given.clear()
            await self._given.wait()
        if self._closed:
            raise Unavailable("the channel ended")
        self.left -= count


ACK_EVERY = WINDOW // 4  # bytes consumed since the last acknowledgement before the next is sent


class Inbox:
    """Bytes of one channel handed over by the link's reader, which never waits here, and written by a task of
    their own to a sink that may be slow (a terminal's input): at most ``WINDOW`` held, acknowledged each
    ``ACK_EVERY`` written. Past the window, or when the sink fails, ``on_end`` runs and nothing more is taken."""

    def __init__(
        self,
        write: Callable[[bytes], Awaitable[None]],
        ack: Callable[[int], Awaitable[None]],
        on_end: Callable[[], Awaitable[None]],
    ) -> None:
        self._write, self._ack, self._on_end = write, ack, on_end
        self._queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.held = 0
        self._over = False
        self.task = asyncio.create_task(self._run(), name="rig-host:inbox")

    def deliver(self, data: bytes) -> None:
        if self._over or not data:
            return
        if self.held + len(data) > WINDOW:
            log.warning("rig hosts: a channel's sender passed its window of %d bytes; ending it", WINDOW)
            self._over = True
            self._queue.put_nowait(None)
            return
        self.held += len(data)
        self._queue.put_nowait(data)

    async def _run(self) -> None:
        written = 0
        try:
            while (data := await self._queue.get()) is not None:
                await self._write(data)
                self.held -= len(data)
                written += len(data)
                if written >= ACK_EVERY:
                    await self._ack(written)
                    written = 0
        except (HangarError, OSError):
            pass  # the terminal closed, or its channel into the rig broke: it ends
        self._over = True
        await self._on_end()


class LaneOverrun(Exception):
    """The peer sent more than the window allows."""


_EOF = b""


class StreamLane:
    def __init__(self, channel: int, send_frame: SendFrame, send_event: SendEvent) -> None:
        self.channel = channel
        self._send_frame, self._send_event = send_frame, send_event
        self._inbox: asyncio.Queue[bytes | LaneOverrun] = asyncio.Queue()  # bounded by ``held`` (the window)
        self.held = 0  # bytes received and not yet written to the socket
        self._credit = Credit()
        self._task: asyncio.Task[None] | None = None
        self._over = False  # ended: by the peer, the link, its own relay, or an overrun
        self._peer_ended = False  # by the peer or the link: nothing more is said to the peer
        self._eof_in = False  # the peer's side finished: a repeat is ignored, bytes after it end the lane
        self._broken: str | None = None  # why the relay was stopped for the peer's fault (``_break``)
        self.done = asyncio.Event()

    # -- from the link's reader (never waits) ----------------------------------------------------------------

    def deliver(self, data: bytes) -> None:
        if self._over or not data:
            return
        if self._eof_in:
            self._break("bytes after the end of the peer's stream")
        elif self.held + len(data) > WINDOW:
            self._overrun(f"{self.held + len(data)} bytes in flight, past the {WINDOW}")
        else:
            self.held += len(data)
            self._inbox.put_nowait(data)

    def _overrun(self, why: str) -> None:
        self._inbox.put_nowait(LaneOverrun(why))
        self._over = True

    def _break(self, why: str) -> None:
        """The peer broke the lane's rules in a way its inbox cannot carry (its relay may have written the end of
        stream and stopped reading it): the relay stops now and the peer is told the lane ended."""
        self._over = True
        if self._task is None:  # not relaying yet: it starts with the failure and nothing else
            while not self._inbox.empty():
                self._inbox.get_nowait()
            self._inbox.put_nowait(LaneOverrun(why))
        else:
            self._broken = why
            self._task.cancel()

    def on_event(self, body: dict[str, Any]) -> None:
        """An event of this lane from the peer; ``ValueError`` when it is malformed (the link ends with it)."""
        event = body.get("event")
        if event == "streamAck":
            self._credit.give(count_of(body, "bytes", 0))
        elif event == "streamEof" and not self._over and not self._eof_in:  # said once: a repeat queues nothing
            self._eof_in = True
            self._inbox.put_nowait(_EOF)
        elif event == "streamEnd":
            self.end()

    def end(self) -> None:
        """The peer or the link ended the lane: the relay stops and closes its socket, saying nothing more."""
        self._over = self._peer_ended = True
        if self._task is not None:
            self._task.cancel()
        else:
            self.done.set()

    # -- the relay -------------------------------------------------------------------------------------------

    def start(self, streams: Streams, on_done: Callable[[], object]) -> None:
        """Relay ``streams`` through the lane until both directions finished or it ended; then ``on_done``."""

        def finished(_: object = None) -> None:  # also when cancelled before it ran a line
            self._over = True
            streams[1].close()
            on_done()
            self.done.set()

        if self._peer_ended:  # ended while its connection was being made
            finished()
            return
        self._task = asyncio.create_task(self._run(streams), name=f"rig-host:stream:{self.channel}")
        self._task.add_done_callback(finished)

    async def _run(self, streams: Streams) -> None:
        reader, writer = streams
        try:
            try:
                async with asyncio.TaskGroup() as group:
                    group.create_task(self._outbound(reader))
                    group.create_task(self._inbound(writer))
            except* (ConnectionError, OSError, HangarError, LaneOverrun) as failed:
                log.info("rig hosts: stream lane %d ended: %s", self.channel, failed.exceptions[0])
        except asyncio.CancelledError:
            if self._broken is None or self._peer_ended:
                return  # ended by the peer, the link, or the forward's removal: nothing more to say
            log.info("rig hosts: stream lane %d ended: %s", self.channel, self._broken)
        self._over = True
        if not self._peer_ended:
            with contextlib.suppress(HangarError):
                await self._send_event({"event": "streamEnd", "channel": self.channel})

    async def _outbound(self, reader: asyncio.StreamReader) -> None:
        while data := await reader.read(CHUNK):
            await self._credit.take(len(data))
            await self._send_frame(self.channel.to_bytes(4, "big") + data)
        await self._send_event({"event": "streamEof", "channel": self.channel})

    async def _inbound(self, writer: asyncio.StreamWriter) -> None:
        while True:
            data = await self._inbox.get()
            if isinstance(data, LaneOverrun):
                raise data
            if data == _EOF:
                if writer.can_write_eof():
                    writer.write_eof()
                return
            writer.write(data)
            await writer.drain()
            self.held -= len(data)
            await self._send_event({"event": "streamAck", "channel": self.channel, "bytes": len(data)})
