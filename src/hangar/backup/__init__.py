"""Backups of a data directory and their restore (``hangar admin backup`` / ``restore``), and scheduled backups.

A backup is one file: a tar archive of the databases (copied consistently from a running server: SQLite's files,
or a ``pg_dump`` of an install on PostgreSQL), the secrets, the
settings and (unless left out) the workspaces' repositories, spaces and worktrees, closed by a manifest of every
item's size and SHA-256; optionally sealed with a passphrase. See ``take``, ``restore``, ``archive`` and ``crypt``.
"""

from __future__ import annotations

from hangar.backup.archive import BackupRefused, Manifest
from hangar.backup.passphrase import PASSPHRASE_ENV, read_passphrase
from hangar.backup.pg_source import PostgresSource, source_for
from hangar.backup.restore import restore_backup, verify
from hangar.backup.sqlite_source import SqliteSource
from hangar.backup.take import Taken, take_backup

__all__ = [
    "PASSPHRASE_ENV",
    "BackupRefused",
    "Manifest",
    "PostgresSource",
    "SqliteSource",
    "Taken",
    "read_passphrase",
    "restore_backup",
    "source_for",
    "take_backup",
    "verify",
]
