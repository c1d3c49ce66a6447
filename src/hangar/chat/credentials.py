"""Chat credentials and half-finished guided setup, in files beside the workspace database.

Layout (``<dataDir>/<workspaceId>/``):

    chat_credentials/                  directory, 0700
    chat_credentials/<provider>.json   the provider's tokens, 0600, written atomically
    chat_credentials/<provider>_setup.json   a guided setup not finished yet (the created app's id...), 0600
    chat_credentials/<provider>_failure.json the connection's last failure (message and time, no token), kept
                                       so a restarted server still says what was wrong until its first attempt

They live in the workspace's directory rather than in its database or the server's ``secrets.json`` so that a
deleted workspace takes its tokens with it, and an export or backup of the database carries none.

Legacy files: earlier layouts kept one credential file and one setup file directly in the workspace directory.
The spec does not name them; this module takes them to be ``<dataDir>/<workspaceId>/chat_credentials.json`` and
``<dataDir>/<workspaceId>/chat_setup.json``, each either an object keyed by provider or, flat, the values of the
one provider. They are read once (``migrate_legacy``, at the part's start), written to the new layout unless a
newer file exists there already, and removed.

Every function takes a ``Workspace`` record looked up in the identity part: an id from input never names a
directory before it has been found to be a workspace.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from hangar.chat.connections import Failure
from hangar.chat.descriptor import CHAT_PROVIDER, DESCRIPTORS, descriptor_for
from hangar.core.datadir import DataDir
from hangar.core.secretfiles import FileSecretFolder, SecretFolder
from hangar.identity import Workspace

log = logging.getLogger(__name__)

DIR_NAME = "chat_credentials"
LEGACY_CREDENTIALS = "chat_credentials.json"
LEGACY_SETUP = "chat_setup.json"


class CredentialFiles:
    def __init__(self, datadir: DataDir, folder: SecretFolder | None = None) -> None:
        """``folder``: where the install keeps them (``AppContext.secret_folder``); files in ``datadir`` when
        not given."""
        self._datadir = datadir
        self._folder = folder or FileSecretFolder(datadir, DIR_NAME)

    @staticmethod
    def _name(provider: str, suffix: str = "") -> str:
        descriptor_for(provider)  # only a declared provider names a secret
        return f"{provider}{suffix}"

    def _read(self, workspace: Workspace, provider: str, suffix: str = "") -> dict[str, Any] | None:
        return self._folder.read(workspace.id, self._name(provider, suffix))

    def _write(self, workspace: Workspace, provider: str, suffix: str, data: dict[str, Any]) -> None:
        self._folder.write(workspace.id, self._name(provider, suffix), data)

    def _remove(self, workspace: Workspace, provider: str, suffix: str = "") -> None:
        self._folder.remove(workspace.id, self._name(provider, suffix))

    # -- credentials -----------------------------------------------------------------------------------------

    def read(self, workspace: Workspace, provider: str) -> dict[str, str] | None:
        data = self._read(workspace, provider)
        if data is None:
            return None
        return {k: v for k, v in data.items() if isinstance(v, str)}

    def write(self, workspace: Workspace, provider: str, credentials: dict[str, str]) -> None:
        self._write(workspace, provider, "", dict(credentials))

    def delete(self, workspace: Workspace, provider: str) -> None:
        """Forget the provider's credentials and any unfinished setup."""
        for suffix in ("", "_setup", "_failure"):
            self._remove(workspace, provider, suffix)

    # -- guided setup ----------------------------------------------------------------------------------------

    def read_setup(self, workspace: Workspace, provider: str) -> dict[str, Any] | None:
        return self._read(workspace, provider, "_setup")

    def write_setup(self, workspace: Workspace, provider: str, setup: dict[str, Any]) -> None:
        self._write(workspace, provider, "_setup", setup)

    def delete_setup(self, workspace: Workspace, provider: str) -> None:
        self._remove(workspace, provider, "_setup")

    # -- the connection's last failure -------------------------------------------------------------------------

    def read_failure(self, workspace: Workspace, provider: str) -> Failure | None:
        data = self._read(workspace, provider, "_failure")
        try:
            return None if data is None else Failure(str(data["message"]), datetime.fromisoformat(str(data["at"])))
        except (KeyError, ValueError):
            return None

    def write_failure(self, workspace: Workspace, provider: str, failure: Failure | None) -> None:
        """Keep the last failure (None: the connection is up again, nothing to keep)."""
        if failure is None:
            self._remove(workspace, provider, "_failure")
        else:
            self._write(workspace, provider, "_failure", {"message": failure.message, "at": failure.at.isoformat()})

    # -- legacy layout ---------------------------------------------------------------------------------------

    def migrate_legacy(self, workspace: Workspace) -> list[str]:
        """Move the legacy credential and setup files into the per-provider layout; returns the files moved."""
        moved = []
        base = self._datadir.workspace_dir(workspace.id)
        for name, suffix in ((LEGACY_CREDENTIALS, ""), (LEGACY_SETUP, "_setup")):
            legacy = base / name
            data = FileSecretFolder.read_path(legacy)
            if data is None:
                if legacy.exists():
                    log.error("legacy chat file %s of workspace %s is unreadable; left in place", name, workspace.id)
                continue
            for provider, values in _per_provider(data).items():
                if not self._folder.exists(workspace.id, self._name(provider, suffix)):  # a newer one wins
                    self._write(workspace, provider, suffix, values)
            legacy.unlink(missing_ok=True)
            moved.append(name)
        return moved


def _per_provider(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Legacy content keyed by provider, or flat for the one provider there was."""
    keyed = {p: v for p, v in data.items() if p in DESCRIPTORS and isinstance(v, dict)}
    if keyed:
        return keyed
    return {CHAT_PROVIDER: data}
