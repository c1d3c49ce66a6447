"""Reading pixels back from the unfiltered RGBA PNGs the desktop stills are (``hangar.rigs.engines.xwd``)."""

from __future__ import annotations

import struct
import zlib


def rgba_at(png: bytes, x: int, y: int) -> tuple[int, ...]:
    """Pixel (x, y) as (red, green, blue, alpha)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width = struct.unpack(">I", png[16:20])[0]
    at, idat = 8, b""
    while at < len(png):
        (length,) = struct.unpack(">I", png[at : at + 4])
        if png[at + 4 : at + 8] == b"IDAT":
            idat += png[at + 8 : at + 8 + length]
        at += 12 + length
    raw = zlib.decompress(idat)
    row = raw[y * (width * 4 + 1) : (y + 1) * (width * 4 + 1)]
    assert row[0] == 0  # no filter
    return tuple(row[1 + x * 4 : 5 + x * 4])
