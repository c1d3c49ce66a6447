"""Stream lanes of a rig host's link (``hangar.rigs.hosts.streams``): two lanes joined back to back as the link
joins them, each relaying a real socket: bytes pass both ways with what a receiver holds never past the window;
a sender at the window is taken and one byte past it ends the lane (and tells the peer); the peer's end closes
the socket; a lane ended while its connection was made closes it at once. A terminal's keystrokes (``Inbox``) at
the window taken and acknowledged as written, one byte past ending the terminal; a sender's credit waiting at the
window, and refused once its channel ended."""

from __future__ import annotations

import asyncio
import os
import socket
from typing import Any

import pytest

from hangar.errors import Unavailable
from hangar.rigs.hosts import streams
from hangar.rigs.hosts.streams import WINDOW, StreamLane

CHANNEL = streams.SERVER_CHANNELS + 1


class Joined:
    """Two lanes, each end's frames and events handed to the other as the link's readers hand them."""

    def __init__(self) -> None:
        self.a = StreamLane(CHANNEL, self._frame_to("b"), self._event_to("b"))
        self.b = StreamLane(CHANNEL, self._frame_to("a"), self._event_to("a"))
        self.most_held = 0

    def _frame_to(self, name: str) -> Any:
        async def send(frame: bytes) -> None:
            lane: StreamLane = getattr(self, name)
            assert int.from_bytes(frame[:4], "big") == CHANNEL and len(frame) - 4 <= streams.CHUNK
            lane.deliver(frame[4:])
            self.most_held = max(self.most_held, lane.held)

        return send

    def _event_to(self, name: str) -> Any:
        async def send(body: dict[str, Any]) -> None:
            getattr(self, name).on_event(body)

        return send


async def pair() -> tuple[socket.socket, tuple[asyncio.StreamReader, asyncio.StreamWriter]]:
    near, far = socket.socketpair()
    return near, await asyncio.open_connection(sock=far)


async def test_bytes_pass_both_ways_within_the_window() -> None:
    joined = Joined()
    near_a, streams_a = await pair()
    near_b, streams_b = await pair()
    joined.a.start(streams_a, lambda: None)
    joined.b.start(streams_b, lambda: None)
    ra, wa = await asyncio.open_connection(sock=near_a)
    rb, wb = await asyncio.open_connection(sock=near_b)
    up, down = os.urandom(3 * 2**20 + 5), os.urandom(2 * 2**20 + 3)
    wa.write(up)
    wa.write_eof()
    wb.write(down)
    wb.write_eof()
    got_b, got_a = await asyncio.gather(rb.read(), ra.read())
    assert got_b == up and got_a == down
    assert 0 < joined.most_held <= WINDOW
    await asyncio.wait_for(asyncio.gather(joined.a.done.wait(), joined.b.done.wait()), 10)
    for w in (wa, wb):
        w.close()


async def test_a_sender_past_the_window_ends_its_lane_and_the_peer_hears_it() -> None:
    said: list[dict[str, Any]] = []

    async def frame(_: bytes) -> None:
        return None

    async def event(body: dict[str, Any]) -> None:
        said.append(body)

    lane = StreamLane(CHANNEL, frame, event)
    near, guest = await pair()
    # Nothing reads the socket's far end yet: the lane holds what came. At the window: taken.
    lane.deliver(b"x" * (WINDOW - 1))
    lane.deliver(b"x")
    assert lane.held == WINDOW
    lane.deliver(b"y")  # one byte past: the lane ends
    ended: list[bool] = []
    lane.start(guest, lambda: ended.append(True))
    reader, writer = await asyncio.open_connection(sock=near)
    got = await asyncio.wait_for(reader.read(), 10)  # what was within the window, then the connection's end
    await asyncio.wait_for(lane.done.wait(), 10)
    assert len(got) <= WINDOW and set(got) <= {ord("x")}
    assert ended == [True]
    assert {"event": "streamEnd", "channel": CHANNEL} in said
    lane.deliver(b"z")  # after its end, nothing more is taken
    assert lane.held <= WINDOW
    writer.close()


async def test_the_peers_end_closes_the_connection() -> None:
    joined = Joined()
    near, guest = await pair()
    joined.a.start(guest, lambda: None)
    reader, writer = await asyncio.open_connection(sock=near)
    writer.write(b"hello")
    await writer.drain()
    joined.a.on_event({"event": "streamEnd", "channel": CHANNEL})
    await asyncio.wait_for(joined.a.done.wait(), 10)
    assert await asyncio.wait_for(reader.read(), 10) == b""
    writer.close()


async def test_a_lane_ended_while_connecting_closes_its_connection_at_once() -> None:
    lane = StreamLane(CHANNEL, Joined()._frame_to("b"), Joined()._event_to("b"))
    lane.end()
    near, guest = await pair()
    done: list[bool] = []
    lane.start(guest, lambda: done.append(True))
    assert done == [True] and lane.done.is_set()
    reader, writer = await asyncio.open_connection(sock=near)
    assert await asyncio.wait_for(reader.read(), 10) == b""
    writer.close()


async def test_a_terminals_keystrokes_at_the_window_are_taken_and_one_byte_past_ends_it() -> None:
    gate = asyncio.Event()  # the shell takes nothing until it is set
    written: list[bytes] = []
    acked: list[int] = []
    ended = asyncio.Event()

    async def write(data: bytes) -> None:
        await gate.wait()
        written.append(data)

    async def ack(count: int) -> None:
        acked.append(count)

    async def end() -> None:
        ended.set()

    inbox = streams.Inbox(write, ack, end)
    inbox.deliver(b"k" * (WINDOW - 1))
    inbox.deliver(b"k")
    assert inbox.held == WINDOW and not ended.is_set()  # at the window: taken
    gate.set()
    await asyncio.sleep(0)
    async with asyncio.timeout(10):
        while inbox.held:
            await asyncio.sleep(0.01)
    assert sum(map(len, written)) == WINDOW
    # Acknowledged as the shell took it, a quarter window at least at a time (so what is unacknowledged and
    # already written stays under a quarter, and a sender always has room for a chunk).
    assert all(count >= streams.ACK_EVERY for count in acked) and WINDOW - sum(acked) < streams.ACK_EVERY
    gate.clear()
    inbox.deliver(b"k" * WINDOW)
    inbox.deliver(b"k")  # one byte past: the terminal ends
    gate.set()
    await asyncio.wait_for(ended.wait(), 10)
    inbox.deliver(b"more")
    assert inbox.held <= WINDOW


async def test_a_credit_closed_refuses_its_waiting_sender() -> None:
    credit = streams.Credit()
    await credit.take(WINDOW)  # the whole window: taken at once
    waiting = asyncio.create_task(credit.take(1))
    await asyncio.sleep(0)
    assert not waiting.done()  # one byte past it waits for an acknowledgement
    credit.give(1)
    await asyncio.wait_for(waiting, 10)
    waiting = asyncio.create_task(credit.take(1))
    await asyncio.sleep(0)
    credit.close()
    with pytest.raises(Unavailable, match="the channel ended"):
        await asyncio.wait_for(waiting, 10)


class Said:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    async def frame(self, _: bytes) -> None:
        return None

    async def event(self, body: dict[str, Any]) -> None:
        self.events.append(body)


async def test_a_repeated_end_of_stream_queues_nothing_more() -> None:
    said = Said()
    lane = StreamLane(CHANNEL, said.frame, said.event)
    lane.deliver(b"abc")
    for _ in range(10_000):  # a peer repeating its end of stream
        lane.on_event({"event": "streamEof", "channel": CHANNEL})
    assert lane._inbox.qsize() == 2  # the bytes and one end of stream
    near, guest = await pair()
    lane.start(guest, lambda: None)
    reader, writer = await asyncio.open_connection(sock=near)
    assert await asyncio.wait_for(reader.read(), 10) == b"abc"  # then the half-close
    writer.close()
    await asyncio.wait_for(lane.done.wait(), 10)


@pytest.mark.parametrize("started", [True, False])
async def test_bytes_after_the_end_of_stream_end_the_lane_and_the_peer_hears_it(started: bool) -> None:
    said = Said()
    lane = StreamLane(CHANNEL, said.frame, said.event)
    near, guest = await pair()
    reader, writer = await asyncio.open_connection(sock=near)
    lane.on_event({"event": "streamEof", "channel": CHANNEL})
    if started:
        lane.start(guest, lambda: None)
        assert await asyncio.wait_for(reader.read(), 10) == b""  # the half-close passed on; the relay goes on
        assert not lane.done.is_set()
    lane.deliver(b"late")
    if not started:
        lane.start(guest, lambda: None)
    await asyncio.wait_for(lane.done.wait(), 10)
    assert {"event": "streamEnd", "channel": CHANNEL} in said.events
    assert lane.held == 0
    writer.close()
