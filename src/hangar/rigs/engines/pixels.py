"""Sizes of the encoded images engines hand back (PNG and JPEG headers), and the fit-inside arithmetic every
still and frame uses: scale down to fit a box keeping the aspect ratio, never up."""

from __future__ import annotations

import struct

from hangar.errors import Unavailable


def fit(width: int, height: int, max_width: int, max_height: int) -> tuple[int, int]:
    """``width`` x ``height`` scaled down to fit ``max_width`` x ``max_height`` (never up, at least 1x1)."""
    scale = min(1.0, max_width / width, max_height / height) if width and height else 1.0
    return max(1, round(width * scale)), max(1, round(height * scale))


def image_size(data: bytes) -> tuple[int, int]:
    """Width and height of a PNG or JPEG; ``Unavailable`` for anything else (the engine sent no image)."""
    if data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR":
        width, height = struct.unpack(">II", data[16:24])
        return int(width), int(height)
    if data[:2] == b"\xff\xd8":
        return _jpeg_size(data)
    raise Unavailable("the engine's screenshot is neither PNG nor JPEG")


# Start-of-frame markers carry the size; every other marker segment is skipped by its length.
_SOF = {0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF}


def _jpeg_size(data: bytes) -> tuple[int, int]:
    i = 2
    while i + 4 <= len(data):
        if data[i] != 0xFF:
            break
        marker = data[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
            i += 2
            continue
        (length,) = struct.unpack(">H", data[i + 2 : i + 4])
        if marker in _SOF and i + 9 <= len(data):
            height, width = struct.unpack(">HH", data[i + 5 : i + 9])
            return int(width), int(height)
        i += 2 + length
    raise Unavailable("the engine's JPEG has no frame header")
