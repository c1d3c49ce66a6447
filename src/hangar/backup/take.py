"""Taking a backup: the archive is written whole beside its target, then renamed onto it.

Everything is written inside a private folder next to the target (``.<name>.<pid>.<n>.partial``, 0700): the database
copies, then the archive itself (0600), which is flushed to disk and only then renamed to the target's name, so a
file at that name is always a complete backup. A kill leaves the folder and never a file at the target's name; the
next backup into the same folder removes what dead processes left.
"""

from __future__ import annotations

import glob
import os
import secrets
import shutil
import sqlite3
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO, Protocol

from hangar import __version__
from hangar.backup.archive import FORMAT, ArchiveWriter, BackupRefused, Manifest
from hangar.backup.compress import LEVEL, CompressingWriter
from hangar.backup.crypt import SealingWriter
from hangar.core.fileio import fsync_dir, pid_alive

_PARTIAL = ".partial"


class Source(Protocol):
    """Where a backup's items come from (``SqliteSource``; a PostgreSQL install's would dump with ``pg_dump``)."""

    database: str

    def check(self) -> None: ...

    def write(self, writer: ArchiveWriter, scratch: Path, *, without_files: bool) -> None: ...


@dataclass(frozen=True)
class Taken:
    path: Path
    size: int
    items: int
    seconds: float


def clear_abandoned(folder: Path, name: str) -> None:
    """Remove the partial folders of backups to ``folder/name`` whose process is gone."""
    for entry in folder.glob(f".{glob.escape(name)}.*{_PARTIAL}"):
        try:
            pid = int(entry.name[len(name) + 2 :].split(".")[0])
        except ValueError:
            continue
        if not pid_alive(pid):
            shutil.rmtree(entry, ignore_errors=True)


def check_target(target: Path, data_root: Path) -> Path:
    """``target`` made absolute, or ``BackupRefused`` when it cannot be written as a backup."""
    target = target.expanduser().absolute()
    if not target.parent.is_dir():
        raise BackupRefused(f"the folder {target.parent} does not exist")
    if target.is_dir():
        raise BackupRefused(f"{target} is a folder: name a file to write the backup to")
    root = data_root.expanduser().absolute()
    if target.is_relative_to(root) or target.resolve().is_relative_to(root.resolve()):
        raise BackupRefused(f"{target} is inside the data directory {root}: write the backup elsewhere")
    return target


def take_backup(
    source: Source,
    target: Path,
    data_root: Path,
    *,
    passphrase: bytes | None,
    without_files: bool,
    level: int = LEVEL,
) -> Taken:
    """Write a backup of ``source`` to ``target`` (replacing a file there only once the new one is complete),
    gzipped at ``level`` (``hangar.backup.compress``; 0 stores the archive in gzip framing uncompressed)."""
    began = time.monotonic()
    target = check_target(target, data_root)
    try:
        source.check()
    except FileNotFoundError as exc:
        raise BackupRefused(str(exc)) from None
    clear_abandoned(target.parent, target.name)
    try:
        return _write(source, target, passphrase=passphrase, without_files=without_files, began=began, level=level)
    except (OSError, sqlite3.Error) as exc:
        said = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise BackupRefused(f"the backup to {target} failed: {said}") from None


def _write(
    source: Source, target: Path, *, passphrase: bytes | None, without_files: bool, began: float, level: int
) -> Taken:
    work = target.parent / f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}{_PARTIAL}"
    work.mkdir(mode=0o700)
    try:
        archive = work / "archive"
        fd = os.open(archive, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "wb", buffering=1 << 20) as out:
            sealing = None if passphrase is None else SealingWriter(out, passphrase)
            packing = CompressingWriter(out if sealing is None else sealing, level)
            writer = ArchiveWriter(packing)
            source.write(writer, work, without_files=without_files)
            manifest = Manifest(
                format=FORMAT,
                hangar_version=__version__,
                created_at=datetime.now(UTC).isoformat(timespec="seconds"),
                database=source.database,
                without_files=without_files,
                items=tuple(writer.items),
            )
            writer.finish(manifest)
            packing.close()
            if sealing is not None:
                sealing.close()
            _sync(out)
        os.rename(archive, target)
        fsync_dir(target.parent)
        return Taken(target, target.stat().st_size, len(writer.items), time.monotonic() - began)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _sync(out: BinaryIO) -> None:
    out.flush()
    os.fsync(out.fileno())
