"""A workspace's folder of secret JSON files beside its database: ``<dataDir>/<workspaceId>/<folder>/``.

The folder is 0700 and each file 0600, written atomically (readers see the old file or the new one). Parts that
keep credentials (the chat bridge, the forges) keep them here rather than in the workspace database or the
server's ``secrets.json``, so that a deleted workspace takes them with it and an export or backup carries none.
The caller passes the id of a workspace it has looked up: an id from input never names a directory unchecked.

That is the store of an install on SQLite (``FileSecretFolder``). An install on PostgreSQL keeps the same
secrets sealed in its database, in the workspace's scope (``hangar.core.sealed.SealedSecretFolder``), so every
host reads them; the application context hands out the one its install uses (``AppContext.secret_folder``).
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any, Protocol

from hangar.core.datadir import DataDir
from hangar.core.fileio import write_private_atomic

log = logging.getLogger(__name__)


class SecretFolder(Protocol):
    """A workspace's named secrets (JSON objects) of one folder."""

    def read(self, workspace_id: str, name: str) -> dict[str, Any] | None: ...

    def write(self, workspace_id: str, name: str, data: dict[str, Any]) -> None: ...

    def remove(self, workspace_id: str, name: str) -> None: ...

    def exists(self, workspace_id: str, name: str) -> bool: ...


class FileSecretFolder:
    def __init__(self, datadir: DataDir, folder: str) -> None:
        self._datadir = datadir
        self._folder = folder

    def directory(self, workspace_id: str) -> Path:
        return self._datadir.workspace_dir(workspace_id) / self._folder

    def path(self, workspace_id: str, name: str) -> Path:
        return self.directory(workspace_id) / f"{name}.json"

    def _ensure_dir(self, workspace_id: str) -> Path:
        folder = self.directory(workspace_id)
        # Never the workspace's directory itself: a deletion that removed it meanwhile leaves it removed.
        self._datadir.workspace_folder(workspace_id, folder, mode=0o700)
        os.chmod(folder, 0o700)  # mkdir's mode is filtered by the umask, and an older directory may be wider
        return folder

    def write_path(self, workspace_id: str, path: Path, data: dict[str, Any]) -> None:
        self._ensure_dir(workspace_id)
        write_private_atomic(path, json.dumps(data, sort_keys=True).encode())

    def write(self, workspace_id: str, name: str, data: dict[str, Any]) -> None:
        self.write_path(workspace_id, self.path(workspace_id, name), data)

    @staticmethod
    def read_path(path: Path) -> dict[str, Any] | None:
        """The object in ``path``; None when absent, not JSON (logged by name, never by content) or not an object."""
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return None
        try:
            data = json.loads(raw)
        except ValueError:
            log.error("secret file %s is not JSON; treated as absent", path.name)
            return None
        return data if isinstance(data, dict) else None

    def read(self, workspace_id: str, name: str) -> dict[str, Any] | None:
        return self.read_path(self.path(workspace_id, name))

    def remove(self, workspace_id: str, name: str) -> None:
        self.path(workspace_id, name).unlink(missing_ok=True)

    def exists(self, workspace_id: str, name: str) -> bool:
        return self.path(workspace_id, name).exists()
