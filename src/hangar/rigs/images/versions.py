"""Versions of a pack: each build is a directory of its own, and the pack's name points at the current one, so a
new build replaces the pack in one step while rigs booted from the old one keep it.

Layout under ``packs_root``: ``.versions/<name>/<id>/`` holds each built version (``id`` says when and by which
process it was built); ``<name>`` is a relative symlink to the current one, replaced atomically (``os.replace``
of a new link) when a new version is installed. A pack built before versions existed is a plain directory at
``<name>``: installing the next version exchanges it with the new link in one ``renameat2(RENAME_EXCHANGE)`` and
files it under ``.versions/<name>/`` like any other version, so at no moment is there no pack at ``<name>``.

Who boots from a version holds a shared ``flock`` on its directory for as long as the rig lives (``hold``); a
version that is no longer current is removed once nobody holds it (``sweep`` takes the lock exclusively, without
waiting, and skips a version in use). A holder checks after taking its lock that the version it locked is still
the current one, so a sweep can never remove a version between a rig's choosing it and its locking it. The locks
are the kernel's: they work across every process and data directory sharing the packs, and a process that dies
releases them.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import fcntl
import logging
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from hangar.errors import Internal, Unavailable

log = logging.getLogger(__name__)

VERSIONS = ".versions"
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100
HOLD_TRIES = 20  # a version replaced between choosing and locking it is chosen again, at most this often


def versions_dir(packs_root: Path, name: str) -> Path:
    return packs_root / VERSIONS / name


def current(packs_root: Path, name: str) -> Path | None:
    """The directory the pack ``name`` boots from now (a version, or a pack from before versions), or None."""
    link = packs_root / name
    try:
        target = os.readlink(link)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.EINVAL:  # a plain directory: a pack built before versions
            return link if link.is_dir() else None
        raise
    return (packs_root / target) if not os.path.isabs(target) else Path(target)


def new_version_path(packs_root: Path, name: str) -> Path:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    return versions_dir(packs_root, name) / f"{stamp}-{os.getpid()}-{time.monotonic_ns() % 1_000_000}"


def install(built: Path, packs_root: Path, name: str) -> Path:
    """Make ``built`` (a complete pack directory beside the packs) the current version of ``name``; return where
    it now lives. The previous version stays until ``sweep`` finds nobody booted from it."""
    home = versions_dir(packs_root, name)
    home.mkdir(parents=True, exist_ok=True)
    final = new_version_path(packs_root, name)
    os.rename(built, final)
    link = packs_root / f".link-{name}-{os.getpid()}"
    link.unlink(missing_ok=True)
    link.symlink_to(final.relative_to(packs_root))
    place = packs_root / name
    if place.is_dir() and not place.is_symlink():
        _exchange(link, place)  # ``link`` is now the old directory
        os.rename(link, home / f"before-versions-{final.name}")
    else:
        os.replace(link, place)
    return final


def _exchange(a: Path, b: Path) -> None:
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    if libc.renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) != 0:
        code = ctypes.get_errno()
        raise Internal(f"could not put the new pack in place of the old one: {os.strerror(code)}")


@dataclass
class HeldPack:
    """A version of a pack some rig boots from, held (shared lock) until ``release``."""

    path: Path
    fd: int | None

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def hold(packs_root: Path, name: str) -> HeldPack:
    """The current version of ``name``, locked shared so no sweep removes it while a rig boots from it."""
    for _ in range(HOLD_TRIES):
        chosen = current(packs_root, name)
        if chosen is None:
            raise Unavailable(f"the pack {name} is not built")
        try:
            fd = os.open(chosen, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            continue  # replaced and removed meanwhile: choose again
        fcntl.flock(fd, fcntl.LOCK_SH)
        if current(packs_root, name) == chosen:
            return HeldPack(chosen.resolve(), fd)
        os.close(fd)
    raise Internal(f"the pack {name} changed under every attempt to boot from it")


def sweep(packs_root: Path, name: str) -> list[str]:
    """Remove the versions of ``name`` that are not current and that no rig holds; return the removed ones."""
    home = versions_dir(packs_root, name)
    now = current(packs_root, name)
    keep = now.resolve() if now is not None else None
    removed: list[str] = []
    with contextlib.suppress(FileNotFoundError):
        for entry in sorted(home.iterdir()):
            if entry.name.startswith(".") or entry.resolve() == keep:
                continue
            try:
                fd = os.open(entry, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue  # a rig still boots from it
                doomed = home / f".removing-{entry.name}"
                try:
                    os.rename(entry, doomed)
                except FileNotFoundError:
                    continue  # another process sharing the packs removed it first
            finally:
                os.close(fd)
            shutil.rmtree(doomed, ignore_errors=True)
            removed.append(entry.name)
            log.info("rigs: pack %s: removed the unused version %s", name, entry.name)
        for leftover in home.glob(".removing-*"):  # a removal a stopped process left half done
            shutil.rmtree(leftover, ignore_errors=True)
    return removed


def held_versions(packs_root: Path, name: str) -> int:
    """How many versions of ``name`` other than the current one are kept (some rig still boots from them)."""
    now = current(packs_root, name)
    keep = now.resolve() if now is not None else None
    try:
        return sum(1 for e in versions_dir(packs_root, name).iterdir() if not e.name.startswith(".") and e != keep)
    except FileNotFoundError:
        return 0
