"""What ``fileExists`` may look at: the run's working directory, and nothing outside it.

The run's shell steps write that directory from their enclosure, so everything in it is hostile to the host: a
name may climb (``../../server.db``), be absolute, or be a symlink pointing anywhere. Looks are therefore made
beneath a descriptor of the directory, one component at a time with ``O_NOFOLLOW``: ``..`` and absolute paths
outside the directory find nothing, a symlink is never followed (and never counts as a file), and a path that
does not stay inside the directory is simply not there. A recursive look is bounded (``MAX_ENTRIES`` entries,
``MAX_DEPTH`` levels, ``MAX_SECONDS``) and runs in a worker thread, never on the event loop: past a bound it
stops with ``LookTooCostly`` naming the bound.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from hangar.errors import Refused

MAX_ENTRIES = 100_000
MAX_DEPTH = 64
MAX_SECONDS = 10.0
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class LookTooCostly(Refused):
    """A recursive look went past one of its bounds."""


@dataclass
class LookBudget:
    """What the looks of one predicate may spend together; ``cancelled`` stops them (the step was cancelled)."""

    entries: int = MAX_ENTRIES
    deadline: float = field(default_factory=lambda: time.monotonic() + MAX_SECONDS)
    cancelled: bool = False
    seen: int = 0

    def spend(self, n: int = 1) -> None:
        self.seen += n
        if self.seen > self.entries:
            raise LookTooCostly(
                f"fileExists looked at more than {self.entries} entries of the run directory; name the path "
                "instead of looking recursively, or look in a smaller part of it"
            )
        if self.cancelled or time.monotonic() > self.deadline:
            raise LookTooCostly(
                f"fileExists spent more than {MAX_SECONDS:g} s looking through the run directory; name the path "
                "instead of looking recursively"
            )


def inside(run_dir: Path, raw: str, base: tuple[str, ...] = ()) -> tuple[str, ...] | None:
    """The components of ``raw`` below ``run_dir`` (relative paths start at ``base``, itself below it), or None
    when ``raw`` is not a path inside the run directory (absolute elsewhere, or climbing with ``..``)."""
    path = PurePosixPath(raw)
    if path.is_absolute():
        try:
            parts = path.relative_to(PurePosixPath(run_dir)).parts
        except ValueError:
            return None
    else:
        parts = (*base, *path.parts)
    if ".." in parts:
        return None
    return tuple(p for p in parts if p not in ("", "."))


def _open_dir(root: Path, parts: Iterable[str]) -> int | None:
    """A descriptor of the directory ``root/<parts>`` reached without following a symlink, or None."""
    try:
        fd = os.open(root, _DIR_FLAGS)
    except OSError:
        return None
    for name in parts:
        try:
            nxt = os.open(name, _DIR_FLAGS, dir_fd=fd)
        except OSError:
            os.close(fd)
            return None
        os.close(fd)
        fd = nxt
    return fd


def exists(run_dir: Path, parts: tuple[str, ...]) -> bool:
    """Whether ``run_dir/<parts>`` is there and is not a symlink; no component is followed if it is one."""
    if not parts:
        return run_dir.is_dir()
    fd = _open_dir(run_dir, parts[:-1])
    if fd is None:
        return False
    try:
        st = os.stat(parts[-1], dir_fd=fd, follow_symlinks=False)
    except OSError:
        return False
    finally:
        os.close(fd)
    return not stat.S_ISLNK(st.st_mode)


def find(run_dir: Path, base: tuple[str, ...], rel: str, skipped: frozenset[str], budget: LookBudget) -> bool:
    """Whether an entry whose path below ``base`` is ``rel`` or ends with ``/rel`` is anywhere under ``base``,
    not descending into ``skipped`` directories or through symlinks."""
    wanted = rel.strip("/")
    if not wanted:
        return False
    top = _open_dir(run_dir, base)
    if top is None:
        return False
    try:
        return _walk(top, "", 0, wanted, skipped, budget)
    finally:
        os.close(top)


def _walk(fd: int, here: str, depth: int, wanted: str, skipped: frozenset[str], budget: LookBudget) -> bool:
    """Depth first below the directory open at ``fd`` (``here`` is its path below the base): one descriptor
    per level, so at most ``MAX_DEPTH`` are open."""
    subdirs: list[str] = []
    with os.scandir(fd) as listing:
        for entry in listing:
            budget.spend()
            path = here + entry.name
            if entry.is_symlink():
                continue  # never followed, never counted
            if path == wanted or path.endswith("/" + wanted):
                return True
            if entry.is_dir(follow_symlinks=False) and entry.name not in skipped:
                subdirs.append(entry.name)
    if subdirs and depth >= MAX_DEPTH:
        raise LookTooCostly(f"fileExists met directories nested deeper than {MAX_DEPTH} levels in the run directory")
    for name in subdirs:
        try:
            child = os.open(name, _DIR_FLAGS, dir_fd=fd)
        except OSError:
            continue  # vanished or replaced by a symlink meanwhile: not there
        try:
            if _walk(child, f"{here}{name}/", depth + 1, wanted, skipped, budget):
                return True
        finally:
            os.close(child)
    return False
