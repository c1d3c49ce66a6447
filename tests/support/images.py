"""Test images and what ffmpeg decodes of them: images made here (a solid PNG by hand, a JPEG by ffmpeg) and
images checked here (size and mean colour as ffmpeg decodes them, independent of the engine code's own header
reader)."""

from __future__ import annotations

import struct
import subprocess
import zlib

RGB = tuple[int, int, int]


def solid_png(width: int, height: int, colour: RGB) -> bytes:
    """A PNG of one colour, written out chunk by chunk."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    rows = b"".join(b"\x00" + bytes(colour) * width for _ in range(height))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def solid_jpeg(width: int, height: int, colour: RGB) -> bytes:
    """A JPEG of one colour, encoded by ffmpeg."""
    hex_colour = "0x{:02x}{:02x}{:02x}".format(*colour)
    return subprocess.run(
        ["ffmpeg", "-v", "error", "-f", "lavfi", "-i", f"color=c={hex_colour}:s={width}x{height}", "-frames:v", "1",
         "-q:v", "2", "-f", "mjpeg", "-"],
        capture_output=True, timeout=30, check=True,
    ).stdout  # fmt: skip


def decoded_size(data: bytes) -> tuple[int, int]:
    """Width and height of an image as ffprobe decodes it."""
    probe = subprocess.run(
        ["ffprobe", "-v", "error", "-show_entries", "stream=width,height", "-of", "csv=p=0", "-i", "-"],
        input=data, capture_output=True, timeout=30, check=True,
    )  # fmt: skip
    width, height = probe.stdout.decode().strip().split(",")[:2]
    return int(width), int(height)


def mean_colour(data: bytes) -> RGB:
    """The average colour of an image, decoded by ffmpeg."""
    raw = subprocess.run(
        ["ffmpeg", "-v", "error", "-i", "-", "-vf", "scale=1:1:flags=area", "-f", "rawvideo", "-pix_fmt", "rgb24", "-"],
        input=data, capture_output=True, timeout=30, check=True,
    ).stdout  # fmt: skip
    return raw[0], raw[1], raw[2]


def near(colour: RGB, expected: RGB, slack: int = 12) -> bool:
    """Whether ``colour`` is ``expected`` within ``slack`` per channel (JPEG and colour conversions shift a bit)."""
    return all(abs(a - b) <= slack for a, b in zip(colour, expected, strict=True))
