"""Copying bytes both ways between two stream connections until either side is done."""

from __future__ import annotations

import asyncio
import contextlib

CHUNK = 64 * 1024


async def pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy one direction until its end (passed on as a half-close) or a broken connection."""
    try:
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (ConnectionError, OSError):
        pass


async def relay(
    a: tuple[asyncio.StreamReader, asyncio.StreamWriter], b: tuple[asyncio.StreamReader, asyncio.StreamWriter]
) -> None:
    """Relay until both directions finished (half-closes are passed on), then close both."""
    try:
        await asyncio.gather(pump(a[0], b[1]), pump(b[0], a[1]))
    finally:
        for writer in (a[1], b[1]):
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
