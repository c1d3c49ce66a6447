"""Engine C's stills are PNG: the host's ffmpeg scales them and turns live-view frames into JPEG (a desktop's
live-view frames too, ``lanes.desktopview``).

One ffmpeg process per still. A long-lived ``image2pipe`` pipe was measured first and rejected: ffmpeg 5.1
hands back each JPEG only after two more PNGs arrived (one frame held by the PNG parser's look-ahead, one by
the pipe reader's 4 KiB blocks), and the live view skips unchanged stills, so the last change would stay
stuck in the pipe until the page changed twice more. A process per still costs its start-up (about 75 ms of
CPU here) and always answers with the still it was given. Without ffmpeg on the host, engine C's live view
and scaled stills are refused with ``Unavailable``; full-size stills need no ffmpeg.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
from typing import Literal

from hangar.errors import Unavailable

JPEG_QSCALE = 5  # ffmpeg's -q:v for MJPEG: 2 is best, 31 worst
TIMEOUT_S = 30.0


def ffmpeg_path() -> str:
    path = shutil.which("ffmpeg")
    if path is None:
        raise Unavailable(
            "engine-c's stills and every desktop's live view need ffmpeg on the server host to scale PNG stills "
            "and make live-view frames; install the ffmpeg package"
        )
    return path


async def transcode_png(data: bytes, width: int, height: int, to: Literal["jpeg", "png"]) -> bytes:
    """The PNG ``data`` scaled to ``width`` x ``height`` and encoded as ``to``."""
    codec = ["-c:v", "mjpeg", "-q:v", str(JPEG_QSCALE)] if to == "jpeg" else ["-c:v", "png"]
    argv = [
        ffmpeg_path(), "-nostdin", "-hide_banner", "-v", "error", "-f", "png_pipe", "-i", "pipe:0",
        "-vf", f"scale={width}:{height}:flags=area", "-frames:v", "1", "-f", "image2pipe", *codec, "pipe:1",
    ]  # fmt: skip
    proc = await asyncio.create_subprocess_exec(
        *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(data), TIMEOUT_S)
    except BaseException as exc:  # a timeout or the caller giving up: never leave the process behind
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
        if isinstance(exc, TimeoutError):
            raise Unavailable(f"ffmpeg did not transcode a still in {TIMEOUT_S:g} s") from None
        raise
    if proc.returncode != 0 or not out:
        detail = err.decode(errors="replace").strip()[-300:]
        raise Unavailable(f"ffmpeg could not transcode a still (exit {proc.returncode}): {detail}")
    return out
