"""What a backup takes from a data directory whose databases are SQLite files (the default install).

Databases are copied through SQLite's online backup API, each in one step: the copy reads one snapshot (under WAL
a reader never blocks the writers of a running server), so every transaction committed before it started is in
it and none is half in it. The server database is copied first, then the database of every workspace the copy
names (a workspace's database is in place before its row is written, so each one named has one).

Secrets are every file the server writes owner-only: ``secrets.json`` (keys, the OIDC client secret, the SCIM
token, the rig lane key), each workspace's ``chat_credentials/``, the dev-domain CA under ``rigs/tls/``; with
``sign-in-origin``, the one setting kept in a file. Files (unless left out): each workspace's ``repos/``,
``spaces/`` and ``worktrees/``. These trees are written by guests: they are walked beneath a descriptor, never by
name, and a symlink in them is stored as a symlink, never followed (``hangar.core.beneath``). Left out on purpose:
image packs, rig runtime state and disks, pipeline run directories, locks, and files being written (``.*.tmp``).
"""

from __future__ import annotations

import os
import sqlite3
import stat
from collections.abc import Container
from pathlib import Path

from hangar.backup.archive import ArchiveWriter, BackupRefused
from hangar.core.beneath import DIR_FLAGS, anchored, walk
from hangar.core.datadir import DataDir, workspace_ids
from hangar.core.dblocation import URL_FILE

SECRET_FILES = ("secrets.json", "sign-in-origin")
TLS_DIR = ("rigs", "tls")
CHAT_DIR = "chat_credentials"
FILE_TREES = ("repos", "spaces", "worktrees")
_SKIP_IN_WORKTREES = frozenset({".staging"})  # checkouts being made
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


def copy_database(src: Path, dst: Path) -> None:
    """A consistent copy of the SQLite database ``src`` at ``dst`` (a new file), through the online backup API."""
    source = sqlite3.connect(f"file:{src}?mode=ro", uri=True, timeout=60)
    try:
        target = sqlite3.connect(dst)
        try:
            source.backup(target)  # pages=-1: one step, one snapshot
        finally:
            target.close()
    finally:
        source.close()
    os.chmod(dst, 0o600)


def _add_database(
    writer: ArchiveWriter, src: Path, name: str, scratch: Path, *, server_of: DataDir | None = None
) -> list[str]:
    """Add a copy of the database ``src`` as ``name``; for the server database of ``server_of``, the workspaces
    its copy names."""
    copy = scratch / "db"
    copy_database(src, copy)
    try:
        ids = workspace_ids(server_of, copy) if server_of is not None else []
        add_private_file(writer, copy, name)
    finally:
        copy.unlink()
    return ids


def add_private_file(writer: ArchiveWriter, path: Path, name: str) -> None:
    """Add the file at ``path`` (one of the backup's own, in its scratch folder) as ``name``, mode 0600."""
    fd = os.open(path, _FILE_FLAGS)
    try:
        writer.add_fd(name, fd, 0o600)
    finally:
        os.close(fd)


def _add_file_at(writer: ArchiveWriter, dir_fd: int, name: str, path: str, st: os.stat_result) -> None:
    try:
        fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
    except OSError:
        return  # gone, or swapped for a symlink, since it was listed
    try:
        if os.path.samestat(st, os.fstat(fd)):
            writer.add_fd(path, fd, st.st_mode)
    finally:
        os.close(fd)


def add_tree(
    writer: ArchiveWriter, anchor: Path, prefix: str, *, skip_top: Container[str] = (), secret: bool = False
) -> None:
    """The tree under the directory ``anchor`` (opened without following it), as items under ``prefix``: folders,
    regular files and symlinks (as symlinks); anything else (sockets, fifos) and the top-level names in
    ``skip_top`` left out. A ``secret`` folder is the server's own: its locks and files being written stay out."""
    try:
        fd = os.open(anchor, DIR_FLAGS)
    except OSError:
        return  # absent (or not a folder): nothing to take
    try:
        writer.add_dir(prefix, os.fstat(fd).st_mode)
        for dir_fd, name, st, parts in walk(fd):
            if parts[0] in skip_top or (secret and name.endswith((".lock", ".tmp"))):
                continue
            path = "/".join((prefix, *parts))
            if stat.S_ISDIR(st.st_mode):
                writer.add_dir(path, st.st_mode)
            elif stat.S_ISLNK(st.st_mode):
                writer.add_symlink(path, os.readlink(name, dir_fd=dir_fd))
            elif stat.S_ISREG(st.st_mode):
                _add_file_at(writer, dir_fd, name, path, st)
    finally:
        os.close(fd)


class SqliteSource:
    """The data directory ``datadir`` of an install on SQLite."""

    database = "sqlite"

    def __init__(self, datadir: DataDir) -> None:
        self.datadir = datadir

    def check(self) -> None:
        # An install whose records moved to PostgreSQL still has the SQLite files it was copied from: backing those
        # up would look like a backup and restore an old state.
        if (self.datadir.root / URL_FILE).exists():
            raise BackupRefused(
                f"the records of {self.datadir.root} are in PostgreSQL (its {URL_FILE} file names the database): "
                "its SQLite files are not its records (hangar.backup.pg_source backs it up)"
            )
        if not self.datadir.server_db.is_file():
            raise FileNotFoundError(f"{self.datadir.root} holds no Hangar server database (server.db)")

    def write(self, writer: ArchiveWriter, scratch: Path, *, without_files: bool) -> None:
        ids = _add_database(writer, self.datadir.server_db, "server.db", scratch, server_of=self.datadir)
        add_server_files(writer, self.datadir.root)
        for ws in ids:
            ws_dir = self.datadir.workspace_dir(ws)
            writer.add_dir(ws, os.lstat(ws_dir).st_mode)
            _add_database(writer, ws_dir / "workspace.db", f"{ws}/workspace.db", scratch)
            add_workspace_files(writer, ws_dir, ws, without_files=without_files)


def add_server_files(writer: ArchiveWriter, root: Path) -> None:
    """The server's secrets and settings files and the dev-domain CA of the data directory at ``root``."""
    with anchored(root) as root_fd:
        for name in SECRET_FILES:
            try:
                st = os.stat(name, dir_fd=root_fd, follow_symlinks=False)
            except FileNotFoundError:
                continue
            if stat.S_ISREG(st.st_mode):
                _add_file_at(writer, root_fd, name, name, st)
    if (root / TLS_DIR[0]).is_dir() and not (root / TLS_DIR[0]).is_symlink():
        writer.add_dir(TLS_DIR[0], 0o700)
        add_tree(writer, root.joinpath(*TLS_DIR), "/".join(TLS_DIR), secret=True)


def add_workspace_files(writer: ArchiveWriter, ws_dir: Path, ws: str, *, without_files: bool) -> None:
    """A workspace's chat credentials and (unless ``without_files``) its repositories, spaces and worktrees, the
    folder ``ws`` itself already added."""
    add_tree(writer, ws_dir / CHAT_DIR, f"{ws}/{CHAT_DIR}", secret=True)
    if without_files:
        return
    for tree in FILE_TREES:
        skip = _SKIP_IN_WORKTREES if tree == "worktrees" else ()
        add_tree(writer, ws_dir / tree, f"{ws}/{tree}", skip_top=skip)
