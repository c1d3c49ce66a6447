"""Dev-domain traffic whose target rig runs on another server of this installation.

A rig's dev-domain lanes run in the server that runs the rig; the name they route to may be another rig of the
same space that another server runs (each rig runs where it was opened). That server is asked for the connection:
one WebSocket to its ``DEV_RELAY_PATH`` carrying a relay token bound to the workspace, the space and the name, so
only servers of this installation reach it and only for what the token names. The holder looks the name up again
in its own reading of the table (the row is the authority, and it may have changed), checks that it belongs to
the space, connects to the target's port and answers ``open``; then binary frames are data, a text frame ``eof``
says that side finished sending (a half-close, passed on), and the socket closes when both sides have finished.
A name the holder cannot route closes the socket with 4000 plus the page's status (``4404``, ``4502``) and the
reason, which the asking rig's lane shows as its usual page. A relayed connection is never relayed again
(``hangar.rigs.lanes.devcrossing``, the holder's side).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Awaitable, Callable
from urllib.parse import urlencode

import websockets

from hangar.core.context import AppContext
from hangar.errors import Elsewhere, HangarError
from hangar.rigs.devdomains.lanes import LaneMiss, Streams
from hangar.rpc.relay import RELAY_HEADER, RelayTokens, open_socket

DEV_RELAY_PATH = "/internal/relay/dev"
OPEN, EOF = "open", "eof"
CHUNK = 64 * 1024
MAX_CROSSING_FRAME = 2 * CHUNK  # the frames are ours, a read's worth each
MISS_BASE = 4000  # a miss closes with 4000 + its page's status (4000 to 4999: close codes for applications)
MISSES = frozenset({404, 502})

Frame = bytes | str | None  # None: the socket ended
SendFrame = Callable[[bytes | str], Awaitable[None]]
NextFrame = Callable[[], Awaitable[Frame]]


def token_target(ws: str, space_id: str, name: str) -> str:
    return f"dev:{ws}/{space_id}/{name}"


async def cross(app: AppContext, moved: Elsewhere, ws: str, space_id: str, name: str) -> Streams:
    """A connection to the dev domain ``name`` of ``space_id`` through the server ``moved`` names, as the streams
    a lane relays; ``LaneMiss`` when that server cannot route it (or cannot be reached)."""
    token = RelayTokens(app.secrets, app.clock).mint(token_target(ws, space_id, name))
    path = f"{DEV_RELAY_PATH}?{urlencode({'ws': ws, 'space': space_id, 'name': name})}"
    try:
        upstream = await open_socket(moved, path, {RELAY_HEADER: token}, MAX_CROSSING_FRAME)
    except HangarError as exc:
        raise LaneMiss(502, f"{name} runs on another server, which does not answer.") from exc
    try:
        first = await upstream.recv()
    except websockets.ConnectionClosed:
        code, reason = upstream.close_code or 1006, upstream.close_reason or ""
        status = code - MISS_BASE if code - MISS_BASE in MISSES else 502
        raise LaneMiss(status, reason or f"{name} runs on another server, which closed the connection.") from None
    if first != OPEN:
        await upstream.close()
        raise LaneMiss(502, f"{name} runs on another server, which answered out of turn.")
    near, far = socket.socketpair()
    mine = await asyncio.open_connection(sock=near)
    theirs = await asyncio.open_connection(sock=far)

    async def next_frame() -> Frame:
        try:
            return await upstream.recv()
        except websockets.ConnectionClosed:
            return None

    async def carry() -> None:
        async with upstream:
            await join(theirs, upstream.send, next_frame)

    task = asyncio.create_task(carry(), name=f"rigs:dev-crossing:{name}")
    _carried.add(task)
    task.add_done_callback(_carried.discard)
    return mine


_carried: set[asyncio.Task[None]] = set()  # held until done: the loop keeps only weak references to tasks


async def join(local: Streams, send: SendFrame, next_frame: NextFrame) -> None:
    """Carry a connection over a socket's frames until both directions have finished, half-closes passed on;
    then close the connection."""
    reader, writer = local

    async def outward() -> None:
        while data := await reader.read(CHUNK):
            await send(data)
        await send(EOF)

    async def inward() -> None:
        while (frame := await next_frame()) is not None and frame != EOF:
            if isinstance(frame, bytes):
                writer.write(frame)
                await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()

    directions = [asyncio.ensure_future(outward()), asyncio.ensure_future(inward())]
    try:
        # Both finish, or one fails (either end went away): the other is stopped, and the connection closed.
        await asyncio.wait(directions, return_when=asyncio.FIRST_EXCEPTION)
    finally:
        for direction in directions:
            direction.cancel()
        await asyncio.gather(*directions, return_exceptions=True)
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()
