"""The data directory layout (documented in README):

<dataDir>/server.db                    server database (users, workspaces, memberships, devices, settings)
<dataDir>/secrets.json                 owner-only (0600) secrets file, written atomically
<dataDir>/<workspaceId>/workspace.db   one database per workspace (events, audit, parts' tables)
<dataDir>/<workspaceId>/chat_credentials/   chat tokens and unfinished setup, 0700/0600 (``hangar.chat.credentials``)
<dataDir>/<workspaceId>/forge_credentials/  the forge connection and hand-given repo links, 0700/0600 (``forges``)
<dataDir>/pipelines/<pipelineRunId>/   shell-step working directories
<dataDir>/rigs/                        rig images, packs, runtime state
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from hangar.errors import InvalidArgs

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

    def workspace_db(self, workspace_id: str) -> Path:
        return self.workspace_dir(workspace_id) / "workspace.db"

    def sub(self, *parts: str) -> Path:
        """A subtree owned by one part (``pipelines``, ``rigs``...), created on demand."""
        path = self.root.joinpath(*parts)
        path.mkdir(parents=True, exist_ok=True)
        return path
