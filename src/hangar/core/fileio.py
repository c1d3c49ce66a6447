"""Atomic, owner-only file writes (a temp file in the same directory, fsync, rename), and what temporary files
left by a dead process need."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def write_private_atomic(path: Path, data: bytes, *, keep: bool = False) -> None:
    """Write ``data`` to ``path`` with mode 0600 so readers see the old or the new file, never half of one.
    ``keep``: a file already at ``path`` stands (the first of concurrent writers wins; later ones write nothing)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if keep:
            with contextlib.suppress(FileExistsError):
                os.link(tmp, path)  # never replaces: the first writer's file stands
            os.unlink(tmp)
        else:
            os.replace(tmp, path)
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def file_signature(path: Path) -> tuple[int, int, int] | None:
    """What changes when ``path`` is replaced or rewritten (inode, size, modification time); None when absent.
    Readers that keep a parsed copy of a file compare it to tell whether another process changed the file."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def fsync_dir(path: Path) -> None:
    """Make a rename or a new entry in the folder ``path`` durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists (the owner of a temporary file or folder named by its pid)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
