"""A desktop's stills: the X Window Dump ``xwd -root`` writes, turned into a PNG on the host.

Only what an X server without a screen of its own gives (Xvfb at depth 24: 32 bits a pixel, true colour, either
byte order) is read; anything else is refused as not a still. Shrinking to the agent bound keeps every k-th pixel
of every k-th row, k the smallest whole factor that fits (2560x1600 becomes 1280x800 exactly); every step runs as
slicing in C, so a full-size still costs tens of milliseconds, not seconds.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

from hangar.errors import Unavailable

_HEADER_FIELDS = 25
_HEADER = struct.Struct(f">{_HEADER_FIELDS}I")
_COLOR_BYTES = 12  # one XWDColor: pixel, red, green, blue (16 bits each), flags, pad
_ZPIXMAP = 2
_TRUE_COLOR = 4
_LSB_FIRST = 0
PNG_LEVEL = 1  # stills are sent at once: fast compression beats small files


@dataclass(frozen=True)
class Still:
    png: bytes
    width: int  # of the PNG
    height: int
    display_width: int  # of the screen it was taken from
    display_height: int


def decode_rgba(dump: bytes) -> tuple[int, int, bytearray]:
    """Width, height and RGBA bytes (alpha 255) of an X Window Dump; ``Unavailable`` when it is not one this
    reader knows (32-bit true colour, ZPixmap)."""
    if len(dump) < _HEADER.size:
        raise Unavailable("the desktop's still is not an X window dump (too short)")
    h = _HEADER.unpack_from(dump)
    header_size, version, fmt, _depth, width, height = h[0], h[1], h[2], h[3], h[4], h[5]
    byte_order, bpp, line, visual, ncolors = h[7], h[11], h[12], h[13], h[19]
    if version != 7 or fmt != _ZPIXMAP or bpp != 32 or visual != _TRUE_COLOR:
        raise Unavailable(f"the desktop's still has a format this server does not read (version {version}, "
                          f"format {fmt}, {bpp} bits a pixel, visual class {visual})")  # fmt: skip
    if not (0 < width <= 16384 and 0 < height <= 16384 and line >= width * 4):
        raise Unavailable(f"the desktop's still has an impossible size {width}x{height}")
    start = header_size + ncolors * _COLOR_BYTES
    pixels = memoryview(dump)[start : start + line * height]
    if len(pixels) < line * height:
        raise Unavailable("the desktop's still was cut short")
    if line != width * 4:  # padded rows: keep each row's pixels only
        pixels = memoryview(b"".join(pixels[r * line : r * line + width * 4] for r in range(height)))
    red_at, blue_at = (2, 0) if byte_order == _LSB_FIRST else (1, 3)  # BGRX in memory, or XRGB
    green_at = 1 if byte_order == _LSB_FIRST else 2
    out = bytearray(len(pixels))
    out[0::4] = pixels[red_at::4]
    out[1::4] = pixels[green_at::4]
    out[2::4] = pixels[blue_at::4]
    out[3::4] = b"\xff" * (width * height)
    return width, height, out


def shrink(width: int, height: int, rgba: bytearray, max_width: int, max_height: int) -> tuple[int, int, bytes]:
    """Keep every k-th pixel of every k-th row, k the smallest whole factor that fits the box (1: unchanged)."""
    k = 1
    while -(-width // k) > max_width or -(-height // k) > max_height:  # the kept pixels: width / k rounded up
        k += 1
    if k == 1:
        return width, height, bytes(rgba)
    words = memoryview(rgba).cast("I")  # one RGBA pixel a word
    new_w, new_h = len(range(0, width, k)), len(range(0, height, k))
    rows = [words[r * width : (r + 1) * width : k].tobytes() for r in range(0, height, k)]
    return new_w, new_h, b"".join(rows)


def png(width: int, height: int, rgba: bytes) -> bytes:
    """An RGBA PNG of ``rgba`` (rows top to bottom, no filter)."""
    stride = width * 4
    raw = b"".join(b"\x00" + rgba[r * stride : (r + 1) * stride] for r in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw, PNG_LEVEL))
            + chunk(b"IEND", b""))  # fmt: skip


def still_of(dump: bytes, max_width: int, max_height: int) -> Still:
    """The PNG still of an X window dump, fit within ``max_width`` x ``max_height``."""
    width, height, rgba = decode_rgba(dump)
    w, h, pixels = shrink(width, height, rgba, max_width, max_height)
    return Still(png(w, h, pixels), w, h, width, height)
