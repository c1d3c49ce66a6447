"""What a restore may write: only the items a backup takes (``hangar.backup.sqlite_source``,
``hangar.backup.pg_source``), each of the kind it is taken as, and only the records of the engine its manifest
names (``check_records``).

A backup file is input, and the data directory is the server's authority: a file planted there by name is trusted
by the server when it starts (``database-url`` would point the install at another database; a ``server.db-wal``
symlink would have SQLite write through it to anywhere the server can). So every item is checked against this list
before anything is written, and the first that is not on it is refused by name. Symlinks are restored only inside
a workspace's repositories, spaces and worktrees, which guests write and the server never follows; everywhere else
only folders and regular files, and never a lock, a file being written, or a SQLite journal.
"""

from __future__ import annotations

from hangar.backup.archive import BackupRefused, Item
from hangar.backup.pg_source import DUMP_ITEM
from hangar.backup.sqlite_source import CHAT_DIR, FILE_TREES, SECRET_FILES, TLS_DIR
from hangar.core.datadir import DataDir
from hangar.core.dblocation import URL_FILE
from hangar.core.secretkey import KEY_FILE
from hangar.errors import InvalidArgs

SERVER_DB = "server.db"
WORKSPACE_DB = "workspace.db"
# Names the server's own folders never hold in a backup: locks, files being written, SQLite's journals.
_TRANSIENT = (".lock", ".tmp", "-wal", "-shm", "-journal")
# The top-level names the server itself uses whose shape would pass for a workspace's id.
# The installation's key (``hangar.core.secretkey``) is never in a backup, so never restored, in any shape.
_SERVERS_OWN = frozenset({URL_FILE, KEY_FILE, TLS_DIR[0], "pipelines", *SECRET_FILES})


def _is_workspace(name: str) -> bool:
    if name in _SERVERS_OWN or name.endswith(_TRANSIENT):  # names of the id's shape the server keeps for itself
        return False
    try:
        DataDir.check_workspace_id(name)
    except InvalidArgs:
        return False
    return True


def _kinds(parts: tuple[str, ...]) -> frozenset[str]:
    """The kinds an item at ``parts`` may be restored as (empty: it may not be restored at all)."""
    top, depth = parts[0], len(parts)
    if depth == 1:
        if top in (SERVER_DB, DUMP_ITEM, *SECRET_FILES):
            return frozenset({"file"})
        if top == TLS_DIR[0] or _is_workspace(top):
            return frozenset({"dir"})
        return frozenset()
    if parts[:2] == TLS_DIR:
        if parts[-1].endswith(_TRANSIENT):
            return frozenset()
        return frozenset({"dir"}) if depth == 2 else frozenset({"dir", "file"})
    if not _is_workspace(top):
        return frozenset()
    if depth == 2:
        if parts[1] == WORKSPACE_DB:
            return frozenset({"file"})
        return frozenset({"dir"}) if parts[1] in (CHAT_DIR, *FILE_TREES) else frozenset()
    if parts[1] in FILE_TREES:  # a guest's tree, restored as it was (its symlinks are never followed)
        return frozenset({"dir", "file", "symlink"})
    if parts[1] == CHAT_DIR and depth == 3 and not parts[2].endswith(_TRANSIENT):
        return frozenset({"file"})
    return frozenset()


def check_allowed(item: Item, parts: tuple[str, ...]) -> None:
    """``BackupRefused`` naming ``item`` unless a backup takes an item of its kind at its path."""
    kinds = _kinds(parts)
    if not kinds:
        raise BackupRefused(f"the backup holds the item {item.path[:200]!r}, which a Hangar backup never holds")
    if item.kind not in kinds:
        raise BackupRefused(
            f"the backup's item {item.path[:200]!r} is a {item.kind}, which a Hangar backup never holds there"
        )


def check_records(database: str, paths: list[str], url_given: bool) -> None:
    """``BackupRefused`` unless the records of a backup whose manifest says ``database`` (its items ``paths``)
    are what that engine's backup holds, and a database URL is given exactly when they go to PostgreSQL."""
    sqlite_files = [p for p in paths if p == SERVER_DB or p.endswith(f"/{WORKSPACE_DB}")]
    if database == "postgresql":
        if DUMP_ITEM not in paths or sqlite_files:
            found = repr(sqlite_files[0]) if sqlite_files else f"no {DUMP_ITEM}"
            raise BackupRefused(f"the backup says its records are in PostgreSQL but holds {found}")
        if not url_given:
            raise BackupRefused(
                f"the backup holds its records as a PostgreSQL dump ({DUMP_ITEM}): give --database-url of an empty "
                "PostgreSQL database to restore them into"
            )
    elif database == "sqlite":
        if DUMP_ITEM in paths:
            raise BackupRefused(f"the backup says its records are SQLite files but holds {DUMP_ITEM!r}")
        if url_given:
            raise BackupRefused(
                "the backup holds SQLite databases: restore it without --database-url (or $HANGAR_DATABASE_URL), "
                "then copy the install to PostgreSQL with hangar admin migrate-to-postgresql"
            )
    else:
        raise BackupRefused(f"the backup's records are in {database[:40]!r}, which this Hangar does not restore")
