"""What ``fileExists`` may look at: the run's working directory and its workspace's guest trees, nothing else.

Relative paths resolve against ``state[baseKey]`` (by default the repo's worktree, ``repo_local_path``), else the
run's working directory (spec, router body). So the folders a look may reach (``Folders``) are the run's working
directory, which its shell steps write, and the workspace's space folders and worktrees, which its spaces' guests
write: everything in them is hostile to the host. A path is placed in one of them lexically (nothing on disk is
resolved to do so); one that lies outside all of them, climbing with ``..`` or absolute elsewhere, is bad input
and fails the step naming it (``OutsideFolders``), never a look at the rest of the host. Looks are made beneath a
descriptor of the folder (``hangar.core.beneath``): a symlink is never followed and never counts as a file.

A recursive look is bounded (``MAX_ENTRIES`` entries, ``MAX_DEPTH`` levels, ``MAX_SECONDS``) and runs in a worker
thread, never on the event loop (``predicates.evaluate``): past a bound it stops with ``LookTooCostly`` naming it.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Container
from dataclasses import dataclass, field
from pathlib import Path

from hangar.core.beneath import anchored, lstat_beneath, opened, walk
from hangar.errors import InvalidArgs, Refused

MAX_ENTRIES = 100_000
MAX_DEPTH = 64
MAX_SECONDS = 10.0


class LookTooCostly(Refused):
    """A recursive look went past one of its bounds."""


class OutsideFolders(InvalidArgs):
    """A path ``fileExists`` was asked about lies outside every folder it may look in."""


@dataclass(frozen=True)
class Folders:
    """Where one run's ``fileExists`` may look: ``run_dir`` (relative paths start there without a base) and
    ``also`` (the workspace's space folders and worktrees)."""

    run_dir: Path
    also: tuple[Path, ...] = ()

    def place(self, path: Path) -> tuple[Path, tuple[str, ...]]:
        """The folder holding ``path`` (an absolute path, named lexically) and the way down to it from there."""
        norm = Path(os.path.normpath(path))
        for root in (self.run_dir, *self.also):
            if norm.is_relative_to(root):
                return root, norm.relative_to(root).parts
        raise OutsideFolders(
            f"fileExists: {norm} lies outside the run's working directory and its workspace's folders",
            field="predicate",
        )


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


def exists(root: Path, parts: tuple[str, ...]) -> bool:
    """Whether ``root/<parts>`` is there and is not a symlink; no component on the way is followed."""
    try:
        with anchored(root) as fd:
            st = lstat_beneath(fd, parts)
    except OSError:  # the folder itself is gone or not a folder
        return False
    return st is not None and not stat.S_ISLNK(st.st_mode)


def find(root: Path, base: tuple[str, ...], rel: str, skipped: Container[str], budget: LookBudget) -> bool:
    """Whether an entry whose path below ``root/<base>`` is ``rel`` or ends with ``/rel`` is anywhere under it,
    not descending into ``skipped`` directories or through symlinks."""
    wanted = rel.strip("/")
    if not wanted:
        return False
    try:
        with anchored(root) as fd, opened(fd, base, os.O_RDONLY | os.O_DIRECTORY) as top:
            for _holder, name, st, parts in walk(top, max_depth=MAX_DEPTH + 1, prune=skipped):
                budget.spend()
                if stat.S_ISLNK(st.st_mode):
                    continue  # never followed, never counted
                if stat.S_ISDIR(st.st_mode) and len(parts) > MAX_DEPTH:
                    raise LookTooCostly(
                        f"fileExists met directories nested deeper than {MAX_DEPTH} levels in the run directory"
                    )
                if stat.S_ISDIR(st.st_mode) and name in skipped:
                    continue
                path = "/".join(parts)
                if path == wanted or path.endswith("/" + wanted):
                    return True
    except OSError:  # the base is gone, not a folder, or reached through a symlink: nothing there
        return False
    return False
