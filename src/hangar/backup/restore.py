"""Restoring a backup into an empty or absent data directory.

The whole file is read and checked against its manifest before anything is written (``scan``); then it is read
again and unpacked into a private folder beside the target (``.<name>.restoring-<pid>-<n>``, 0700), each item
checked again as it is written, and that folder is renamed onto the target only when every item is in place. So a
refusal at any point leaves the target as it was. The archive is input: every path is checked to be plain and
to be one a backup takes, of the kind it takes there (``hangar.backup.allowed``: no ``database-url``, no SQLite
journal, no lock, symlinks only in the files of workspaces), every item before anything is written; every item is
made beneath the folder's descriptor without following anything (a symlink the archive holds is made as a symlink
and never walked through, nor opened: files are made with ``O_NOFOLLOW | O_EXCL``, folders opened ``O_NOFOLLOW``).
The server's own files (its databases, secrets, chat credentials, the dev-domain CA) are made owner-only whatever
the archive says; the data directory itself is 0700. A backup of an install on PostgreSQL restores its records into
an empty database given by URL (``hangar.backup.pg_source``), after the files are in place and before the folder is
renamed.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import secrets
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from sqlalchemy.engine import URL

from hangar.backup.allowed import check_allowed, check_records
from hangar.backup.archive import BackupRefused, Item, Manifest, check_path, scan
from hangar.backup.crypt import Damaged, OpeningReader, WrongPassphrase, is_sealed
from hangar.backup.pg_source import DUMP_ITEM, check_empty, restore_records
from hangar.backup.sqlite_source import CHAT_DIR, FILE_TREES
from hangar.core.beneath import DIR_FLAGS
from hangar.core.dblocation import record_url

_libc = ctypes.CDLL(None, use_errno=True)
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def check_target(data_dir: Path) -> Path:
    data_dir = data_dir.expanduser().absolute()
    if data_dir.is_symlink() or (data_dir.exists() and not data_dir.is_dir()):
        raise BackupRefused(f"{data_dir} is not a folder: restore into an empty or absent folder")
    if data_dir.is_dir() and any(data_dir.iterdir()):
        raise BackupRefused(f"{data_dir} is not empty: restore into an empty or absent folder")
    return data_dir


@contextlib.contextmanager
def _opened(backup: Path, passphrase: bytes | None) -> Iterator[IO[bytes]]:
    try:
        handle = backup.open("rb")
    except FileNotFoundError:
        raise BackupRefused(f"there is no backup at {backup}") from None
    except OSError as exc:
        raise BackupRefused(f"{backup} cannot be read: {exc.strerror}") from None
    with handle:
        if not is_sealed(handle.read(8)):
            handle.seek(0)
            yield handle
            return
        if passphrase is None:
            raise BackupRefused(
                f"{backup} is encrypted: give its passphrase (--passphrase-file or HANGAR_BACKUP_PASSPHRASE)"
            )
        handle.seek(0)
        try:
            reader: Any = OpeningReader(handle, passphrase)
        except (WrongPassphrase, Damaged) as exc:
            raise BackupRefused(str(exc)) from None
        yield reader


def _in_files(parts: tuple[str, ...]) -> bool:
    """A workspace's repositories, spaces and worktrees (everything else is the server's own)."""
    return len(parts) >= 2 and parts[1] in FILE_TREES


def _secret(parts: tuple[str, ...]) -> bool:
    return parts[-1] in ("secrets.json", DUMP_ITEM) or parts[-1].endswith((".db", ".key")) or CHAT_DIR in parts[:-1]


def _mode(parts: tuple[str, ...], item: Item) -> int:
    """The mode ``item`` is restored with: as it was in the files of workspaces (without set-id bits); the
    server's own folders 0700, its secrets 0600 and its other files as they were, writable by the owner only."""
    if _in_files(parts):
        return item.mode & 0o1777
    if item.kind == "dir":
        return 0o700
    return 0o600 if _secret(parts) else item.mode & 0o755


class Unpacker:
    """Makes each item it is handed beneath the folder ``root_fd`` (``scan``'s ``on_item``), checked to be one a
    backup holds there; ``finish`` sets the folders' modes, ``close`` lets go of the last folder."""

    def __init__(self, root_fd: int) -> None:
        self.root_fd = root_fd
        self.dir_modes: list[tuple[tuple[str, ...], int]] = []
        self._last: tuple[tuple[str, ...], int] | None = None  # the folder items went into last (they come in runs)

    def close(self) -> None:
        if self._last is not None:
            os.close(self._last[1])
            self._last = None

    def _cached_parent(self, parts: tuple[str, ...]) -> int:
        if self._last is not None and self._last[0] == parts:
            return self._last[1]
        self.close()
        self._last = (parts, self._parent(parts))
        return self._last[1]

    def _parent(self, parts: tuple[str, ...]) -> int:
        fd = os.open(".", DIR_FLAGS, dir_fd=self.root_fd)
        for part in parts:
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, 0o700, dir_fd=fd)
            try:
                inner = os.open(part, DIR_FLAGS, dir_fd=fd)  # a symlink here is refused, never followed
            finally:
                os.close(fd)
            fd = inner
        return fd

    def __call__(self, item: Item, pieces: Iterator[bytes]) -> None:
        parts = check_path(item.path)
        check_allowed(item, parts)  # again: the file is read a second time, and could have changed since
        try:
            parent = self._cached_parent(parts[:-1])
            name = parts[-1]
            if item.kind == "dir":
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, 0o700, dir_fd=parent)
                os.close(os.open(name, DIR_FLAGS, dir_fd=parent))
                self.dir_modes.append((parts, _mode(parts, item)))
            elif item.kind == "symlink":
                assert item.target is not None
                os.symlink(item.target, name, dir_fd=parent)
            else:
                fd = os.open(name, _NEW_FILE, 0o600, dir_fd=parent)
                try:
                    for piece in pieces:
                        _write_all(fd, piece)
                    os.fchmod(fd, _mode(parts, item))
                finally:
                    os.close(fd)
        except FileExistsError:
            raise BackupRefused(f"the backup holds the item {item.path!r} twice") from None
        except OSError as exc:
            raise BackupRefused(f"the item {item.path!r} cannot be restored: {exc.strerror}") from None

    def finish(self) -> None:
        for parts, mode in sorted(self.dir_modes, key=lambda d: -len(d[0])):  # deepest first: a 0500 folder last
            parent = self._parent(parts[:-1])
            try:
                os.chmod(parts[-1], mode, dir_fd=parent, follow_symlinks=False)
            finally:
                os.close(parent)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _syncfs(fd: int) -> None:
    """Flush everything written to the file system holding ``fd`` (one call instead of an fsync per file)."""
    if _libc.syncfs(fd) != 0:
        os.sync()


def _restore_records(pg_restore: Path, work: Path, url: URL) -> None:
    """The dump unpacked into ``work`` restored into ``url`` and removed; ``url`` recorded in ``work``."""
    with tempfile.TemporaryDirectory(prefix="hangar-restore-") as scratch:  # the password file, 0700
        restore_records(pg_restore, work / DUMP_ITEM, url, Path(scratch))
    (work / DUMP_ITEM).unlink()
    record_url(work, url)


def verify(backup: Path, passphrase: bytes | None) -> Manifest:
    """Check every item of ``backup`` against its manifest; the manifest, or ``BackupRefused`` naming the item."""
    with _opened(backup, passphrase) as stream:
        return scan(stream)


def restore_backup(
    backup: Path,
    data_dir: Path,
    passphrase: bytes | None,
    *,
    database_url: URL | None = None,
    pg_bindir: Path | None = None,
) -> Manifest:
    """Restore ``backup`` into ``data_dir`` (empty or absent), checked whole first; the manifest. A backup of an
    install on PostgreSQL restores its records into the empty database ``database_url`` (its password with it),
    which the data directory then records."""
    data_dir = check_target(data_dir)
    backup = backup.expanduser().absolute()
    manifest = verify(backup, passphrase)
    for item in manifest.items:  # every item, before anything is written
        check_allowed(item, check_path(item.path))
    check_records(manifest.database, [i.path for i in manifest.items], database_url is not None)
    pg_restore = check_empty(database_url, pg_bindir) if database_url is not None else None
    work = data_dir.parent / f".{data_dir.name}.restoring-{os.getpid()}-{secrets.token_hex(4)}"
    try:
        data_dir.parent.mkdir(parents=True, exist_ok=True)
        work.mkdir(mode=0o700)
    except OSError as exc:
        raise BackupRefused(f"{data_dir} cannot be made: {exc.strerror}") from None
    try:
        root_fd = os.open(work, DIR_FLAGS)
        try:
            unpack = Unpacker(root_fd)
            try:
                with _opened(backup, passphrase) as stream:
                    again = scan(stream, unpack)
            finally:
                unpack.close()
            if again != manifest:
                raise BackupRefused(f"{backup} changed while it was being restored")
            unpack.finish()
            if pg_restore is not None:
                assert database_url is not None
                _restore_records(pg_restore, work, database_url)
            _syncfs(root_fd)
        finally:
            os.close(root_fd)
        check_target(data_dir)
        if data_dir.is_dir():
            data_dir.rmdir()
        os.rename(work, data_dir)
        os.chmod(data_dir, 0o700)
    except OSError as exc:
        raise BackupRefused(f"the restore into {data_dir} failed: {exc.strerror}") from None
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return manifest
