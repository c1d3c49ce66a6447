"""Where a meeting's audio lies: ``<workspace folder>/meetings/<meeting id>/``, holding ``<channel id>.wav`` per
retained channel (16 kHz mono 16-bit PCM) and ``playback.wav`` (the mixed track). Every name is an id the server
made and read back from its own rows, never one from input. Files are written beside their final name and renamed
into place, so a reader never sees half a file; they are read without following symlinks."""

from __future__ import annotations

import asyncio
import errno
import os
import shutil
import stat
from collections.abc import AsyncIterator
from pathlib import Path

from hangar.core.context import AppContext
from hangar.core.ids import new_id
from hangar.errors import NotFound

PLAYBACK = "playback.wav"


def meetings_root(app: AppContext, workspace_id: str) -> Path:
    return app.datadir.workspace_dir(workspace_id) / "meetings"


def meeting_dir(app: AppContext, workspace_id: str, meeting_id: str) -> Path:
    return meetings_root(app, workspace_id) / meeting_id


def channel_path(app: AppContext, workspace_id: str, meeting_id: str, channel_id: str) -> Path:
    """The normalised WAV of a retained channel (``store.channels`` lists them)."""
    return meeting_dir(app, workspace_id, meeting_id) / f"{channel_id}.wav"


def playback_path(app: AppContext, workspace_id: str, meeting_id: str) -> Path:
    return meeting_dir(app, workspace_id, meeting_id) / PLAYBACK


def scratch_path(app: AppContext, workspace_id: str, meeting_id: str, suffix: str) -> Path:
    """A fresh name in the meeting's folder (made if need be) for a file being written, renamed into place later."""
    folder = meeting_dir(app, workspace_id, meeting_id)
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    return folder / f".{new_id()}.{suffix}"


def open_file(path: Path) -> int:
    """A descriptor of a file of the meeting's folder, open to read: a regular file, never through a symlink;
    ``NotFound`` when absent."""
    try:  # O_NONBLOCK: a FIFO in its place does not hang the open (it is refused below)
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        raise NotFound(f"{path.name} is not stored") from None
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
        raise NotFound(f"{path.name} is not a stored file (a symlink in its place)") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise NotFound(f"{path.name} is not a stored file")
    os.set_blocking(fd, True)
    return fd


def read_file(path: Path) -> bytes:
    """A file of the meeting's folder: a regular file, never through a symlink; ``NotFound`` when absent."""
    with os.fdopen(open_file(path), "rb") as f:
        return f.read()


def read_head(path: Path, size: int) -> bytes:
    """The first ``size`` bytes of a file of the meeting's folder (as ``read_file``)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as f:
        return f.read(size)


def file_stream(path: Path, missing: str) -> tuple[AsyncIterator[bytes], int]:
    """A file of the meeting's folder served in chunks (read off the event loop, never through a symlink) and its
    size; ``NotFound`` saying ``missing`` when absent."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        raise NotFound(missing) from None
    reader = os.fdopen(fd, "rb")
    size = os.fstat(reader.fileno()).st_size

    async def chunks() -> AsyncIterator[bytes]:
        with reader:
            while chunk := await asyncio.to_thread(reader.read, 1 << 20):
                yield chunk

    return chunks(), size


def read_channel(app: AppContext, workspace_id: str, meeting_id: str, channel_id: str) -> bytes:
    """A retained channel's WAV bytes."""
    return read_file(channel_path(app, workspace_id, meeting_id, channel_id))


def remove_meeting_files(app: AppContext, workspace_id: str, meeting_id: str) -> None:
    shutil.rmtree(meeting_dir(app, workspace_id, meeting_id), ignore_errors=True)


def discard(path: Path) -> None:
    path.unlink(missing_ok=True)
