"""The owner-only secrets file.

Secrets (OIDC client secret, SCIM token, agent API keys...) live here and nowhere else: never in a database,
a log or a reply. The file is JSON, mode 0600, rewritten atomically on every change. Keys are namespaced by
the part that owns them, e.g. ``sso.oidc.clientSecret`` or ``agents.<workspaceId>.<agentId>.apiKey``.
"""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path

from hangar.core.fileio import write_private_atomic
from hangar.errors import Internal


class SecretsFile:
    def __init__(self, path: Path) -> None:
        self._path = path
        self._lock = threading.Lock()
        self._data: dict[str, str] = self._load()

    @property
    def path(self) -> Path:
        return self._path

    def _load(self) -> dict[str, str]:
        if not self._path.exists():
            return {}
        mode = stat.S_IMODE(os.stat(self._path).st_mode)
        if mode & 0o077:
            # Someone widened the permissions by hand; narrow them again before reading.
            os.chmod(self._path, 0o600)
        try:
            raw = json.loads(self._path.read_text())
        except (OSError, ValueError) as exc:
            raise Internal(f"the secrets file {self._path.name} cannot be read") from exc
        if not isinstance(raw, dict) or not all(isinstance(v, str) for v in raw.values()):
            raise Internal(f"the secrets file {self._path.name} is not a map of strings")
        return {str(k): v for k, v in raw.items()}

    def get(self, key: str) -> str | None:
        with self._lock:
            return self._data.get(key)

    def has(self, key: str) -> bool:
        with self._lock:
            return key in self._data

    def set(self, key: str, value: str) -> None:
        with self._lock:
            self._data[key] = value
            self._flush()

    def delete(self, key: str) -> None:
        with self._lock:
            if self._data.pop(key, None) is not None:
                self._flush()

    def delete_prefix(self, prefix: str) -> None:
        with self._lock:
            doomed = [k for k in self._data if k.startswith(prefix)]
            for k in doomed:
                del self._data[k]
            if doomed:
                self._flush()

    def _flush(self) -> None:
        write_private_atomic(self._path, json.dumps(self._data, indent=1, sort_keys=True).encode())
