"""The package ``install_apk`` names, found where the spec confines it and copied where only the server writes.

A path is the rig's worktree's (relative to it, or under ``/home/rig/worktree`` as a terminal rig sees it, or
under the worktree's own folder on this host) or the data directory's (under ``<dataDir>/rigs/apks``, where an
operator puts packages). Anything a guest can write is hostile: the file is opened beneath the server-made folder
holding the tree, with no symlink followed anywhere on the way (``hangar.core.beneath``), checked to be a regular
file, and copied (with its SHA-256) into a staging file under ``<dataDir>/rigs/mobile/staging`` that adb then
reads. adb never opens the guest's path, so a file swapped after the check is not the one installed.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

from hangar.core.beneath import NotBeneath, anchored, open_beneath, parts_of
from hangar.errors import InvalidArgs, NotFound, Refused
from hangar.rigs.backends.base import GUEST_WORKTREE, GuestTree

FIELD = "action.path"
MAX_APK_BYTES = 4 << 30  # 4 GiB: larger than any package a store accepts
_CHUNK = 1 << 20


@dataclass(frozen=True)
class StagedApk:
    path: Path  # the server's copy, for adb
    size: int
    sha256: str
    source: str  # where it came from, as named: for the reply and the action log


def _where(path: str, worktree: GuestTree | None, apks: Path) -> tuple[Path, str, str]:
    """The anchor folder, the path beneath it and which root it is in; ``InvalidArgs`` outside both roots."""
    roots = f"the rig's worktree (a relative path, or under {GUEST_WORKTREE}) or {apks}"
    if path.startswith("/") and not path.startswith(GUEST_WORKTREE + "/"):
        if worktree is not None and path.startswith(f"{worktree.path}/"):
            rel = path[len(str(worktree.path)) + 1 :]
        elif path.startswith(f"{apks}/"):
            return apks, "/".join(parts_of(path[len(str(apks)) + 1 :])), "data directory"
        else:
            raise InvalidArgs(f"{FIELD}: {path!r} is outside {roots}", field=FIELD)
    else:
        rel = path.removeprefix(GUEST_WORKTREE + "/")
    if worktree is None:
        raise InvalidArgs(f"{FIELD}: this rig's space has no worktree; give a path under {apks}", field=FIELD)
    inside = "/".join(parts_of(rel))  # ".." may not climb out of the worktree into the rest of the space's folder
    return worktree.folder, f"{worktree.beneath}/{inside}" if worktree.beneath else inside, "worktree"


def stage(path: str, worktree: GuestTree | None, apks: Path, staging: Path) -> StagedApk:
    """Copy the package at ``path`` (see the module) to a new staging file; the caller removes it after use.
    Blocking: run it in a thread."""
    root = "worktree" if not path.startswith(f"{apks}/") else "data directory"
    try:
        anchor, rel, root = _where(path, worktree, apks)
        with anchored(anchor) as top:
            fd = open_beneath(top, rel, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except NotBeneath:
        raise Refused(
            f"{FIELD}: {path!r} passes through a symbolic link or leaves the {root}; packages are read only "
            "from real files inside it"
        ) from None
    except (FileNotFoundError, NotADirectoryError):
        raise NotFound(f"{FIELD}: no file {path!r} in the {root}") from None
    staging.mkdir(parents=True, exist_ok=True, mode=0o700)
    target = staging / f"{secrets.token_hex(8)}.apk"
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Refused(f"{FIELD}: {path!r} is not a regular file")
        if st.st_size > MAX_APK_BYTES:
            raise Refused(f"{FIELD}: {path!r} is {st.st_size} bytes, over the {MAX_APK_BYTES} byte limit")
        digest = hashlib.sha256()
        size = 0
        out = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        with os.fdopen(out, "wb") as sink:
            while chunk := os.read(fd, _CHUNK):
                size += len(chunk)
                if size > MAX_APK_BYTES:
                    raise Refused(f"{FIELD}: {path!r} grew past the {MAX_APK_BYTES} byte limit while read")
                digest.update(chunk)
                sink.write(chunk)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            target.unlink()
        raise
    finally:
        os.close(fd)
    return StagedApk(target, size, digest.hexdigest(), path)
