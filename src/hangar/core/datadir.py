"""The data directory layout (documented in README):

<dataDir>/server.db                    server database (users, workspaces, memberships, devices, settings)
<dataDir>/secrets.json                 owner-only (0600) secrets file, written atomically (SQLite installs)
<dataDir>/secret-key                   the installation's key sealing the secrets kept in PostgreSQL (0600)
<dataDir>/<workspaceId>/workspace.db   one database per workspace (events, audit, parts' tables)
<dataDir>/<workspaceId>/chat_credentials/   chat tokens and unfinished setup, 0700/0600 (``hangar.chat.credentials``)
<dataDir>/<workspaceId>/forge_credentials/  the forge connection and hand-given repo links, 0700/0600 (``forges``)
<dataDir>/pipelines/<pipelineRunId>/   shell-step working directories
<dataDir>/rigs/                        rig images, packs, runtime state
"""

from __future__ import annotations

import os
import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from hangar.errors import InvalidArgs, NotFound

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_WORKSPACE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")


@dataclass(frozen=True)
class DataDir:
    root: Path

    def ensure(self) -> DataDir:
        self.root.mkdir(parents=True, exist_ok=True)
        os.chmod(self.root, 0o700)
        return self

    @property
    def server_db(self) -> Path:
        return self.root / "server.db"

    @property
    def secrets_file(self) -> Path:
        return self.root / "secrets.json"

    @staticmethod
    def check_workspace_id(workspace_id: str) -> str:
        """``workspace_id`` if valid (it names a directory or a PostgreSQL schema), else ``InvalidArgs``."""
        if not _WORKSPACE_ID.match(workspace_id):
            raise InvalidArgs(f"workspace_id {workspace_id!r} is not a valid id", field="workspace_id")
        return workspace_id

    def workspace_dir(self, workspace_id: str) -> Path:
        return self.root / self.check_workspace_id(workspace_id)

    def workspace_folder(self, workspace_id: str, path: Path, *, mode: int = 0o777) -> Path:
        """Make ``path`` (and its parents up to the workspace's directory) if missing, but never the workspace's
        directory itself: that comes with its database (``Databases.create_workspace``) and goes with its deletion.
        Each folder is made beneath the descriptor of the one above, so a deletion that removed the directory
        after the caller's checks leaves it removed (``mkdir`` in a removed directory fails), and the caller is
        told the workspace is gone (``NotFound``) instead of recreating an empty folder under it."""
        top = self.workspace_dir(workspace_id)
        names = path.relative_to(top).parts
        gone = NotFound(f"workspace {workspace_id} no longer exists (it was deleted)")
        try:
            fd = os.open(top, _DIR_FLAGS)
        except FileNotFoundError:
            raise gone from None
        try:
            for name in names:
                try:
                    os.mkdir(name, mode, dir_fd=fd)
                except FileExistsError:
                    pass
                except FileNotFoundError:  # the directory holding it was removed meanwhile
                    raise gone from None
                child = os.open(name, _DIR_FLAGS, dir_fd=fd)
                os.close(fd)
                fd = child
        finally:
            os.close(fd)
        return path

    def workspace_db(self, workspace_id: str) -> Path:
        return self.workspace_dir(workspace_id) / "workspace.db"

    def sub(self, *parts: str) -> Path:
        """A subtree owned by one part (``pipelines``, ``rigs``...), created on demand."""
        path = self.root.joinpath(*parts)
        path.mkdir(parents=True, exist_ok=True)
        return path


def workspace_ids(datadir: DataDir, server_db: Path | None = None) -> list[str]:
    """The workspaces the server database (``server_db``, else the data directory's) names that have a database
    in ``datadir``, in id order. The server's record decides, not the folders: a folder that merely looks like a
    workspace's (any name of the id's shape with a ``workspace.db`` in it, such as ``rigs``) is not one."""
    conn = sqlite3.connect(f"file:{quote(str(server_db or datadir.server_db))}?mode=ro", uri=True, timeout=60)
    try:
        # The identity part's table, read by name: the tools that copy databases (a backup, the copy into
        # PostgreSQL) work on files and know no part's stores.
        named = [str(r[0]) for r in conn.execute("SELECT id FROM workspaces")]
    finally:
        conn.close()
    found: list[str] = []
    for ws in named:
        if not _WORKSPACE_ID.match(ws):
            continue
        ws_dir = datadir.root / ws
        if not ws_dir.is_symlink() and (ws_dir / "workspace.db").is_file():
            found.append(ws)
    return sorted(found)
