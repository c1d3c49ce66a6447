"""Conformance steps for images on a page's clipboard, shared by the engines whose clipboard holds them (A and
C): called from their test modules with a session already on a secure (loopback) page. What an image looks like
after the round trip is checked as ffmpeg decodes it, not by the engine code's own reader."""

from __future__ import annotations

from hangar.rigs.engines.session import EngineSession
from tests.support.images import decoded_size, mean_colour, near, solid_jpeg, solid_png

RED = (220, 30, 30)
BLUE = (20, 40, 200)


async def round_trip(session: EngineSession) -> None:
    """A PNG written reads back as the same picture; a JPEG is kept as PNG (these engines take PNG only) and
    the write says so; text written afterwards replaces the image."""
    assert await session.clipboard_write_image("image/png", solid_png(64, 48, RED)) is True
    assert session.clipboard_image_note is None
    read = await session.clipboard_read_image()
    assert read is not None and session.clipboard_image_note is None
    mime, data = read
    assert mime == "image/png" and decoded_size(data) == (64, 48) and near(mean_colour(data), RED)

    assert await session.clipboard_write_image("image/jpeg", solid_jpeg(50, 30, BLUE)) is True
    note = session.clipboard_image_note
    assert note is not None and f"{session.engine}'s clipboard takes PNG images only" in note
    read = await session.clipboard_read_image()
    assert read is not None
    mime, data = read
    assert mime == "image/png" and decoded_size(data) == (50, 30) and near(mean_colour(data), BLUE)

    assert await session.clipboard_write("text after the image") is True
    assert await session.clipboard_read_image() is None and session.clipboard_image_note is None
    assert await session.clipboard_read() == "text after the image"


async def undecodable_is_refused(session: EngineSession) -> None:
    """Bytes that only start like an image are refused by the page, with its reason, and the clipboard keeps
    what it held."""
    assert await session.clipboard_write("kept") is True
    assert await session.clipboard_write_image("image/png", b"\x89PNG\r\n\x1a\n" + bytes(64)) is False
    assert session.clipboard_image_note and "refused" in session.clipboard_image_note
    assert await session.clipboard_write_image("image/jpeg", b"\xff\xd8\xff" + bytes(64)) is False
    assert session.clipboard_image_note and "could not convert the image to PNG" in session.clipboard_image_note
    assert await session.clipboard_read() == "kept"
