"""The owner-only secrets file.

Secrets (OIDC client secret, SCIM token, agent API keys...) live here and nowhere else: never in a database,
a log or a reply. The file is JSON, mode 0600, rewritten atomically on every change. Keys are namespaced by
the part that owns them, e.g. ``sso.oidc.clientSecret`` or ``agents.<workspaceId>.<agentId>.apiKey``.

Other processes share the file (the CLI, a second server): a read checks whether the file changed since it was
loaded (its inode, size and modification time; a rename replaces the inode) and reloads it, and a change is
read-modify-written under an exclusive lock on ``secrets.json.lock``, so no process writes back a stale copy over
another's change.

That is the store of an install on SQLite. An install on PostgreSQL keeps the same secrets sealed in its
database (``hangar.core.sealed.SealedSecretsFile``), so every process on every host reads the same ones at once;
both answer ``Secrets``, and the application context holds the one its install uses.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import stat
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Protocol

from hangar.core.fileio import file_signature, write_private_atomic
from hangar.errors import Internal


class Secrets(Protocol):
    """Named secret strings of the server."""

    def get(self, key: str) -> str | None: ...

    def has(self, key: str) -> bool: ...

    def set(self, key: str, value: str) -> None: ...

    def set_if_absent(self, key: str, value: str) -> str:
        """Store ``value`` unless ``key`` holds one already; the stored value either way, so processes making
        the same secret at once (a signing key on first use) all end up with one."""
        ...

    def delete(self, key: str) -> None: ...

    def delete_prefix(self, prefix: str) -> None: ...


class SecretsFile:
    def __init__(self, path: Path) -> None:
        self._path = path
        self._lock = threading.Lock()
        self._seen: tuple[int, int, int] | None = None
        self._data: dict[str, str] = self._load()

    @property
    def path(self) -> Path:
        return self._path

    def _signature(self) -> tuple[int, int, int] | None:
        return file_signature(self._path)

    def _load(self) -> dict[str, str]:
        signature = self._signature()
        if signature is None:
            self._seen = None
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
        self._seen = signature
        return {str(k): v for k, v in raw.items()}

    def _current(self) -> dict[str, str]:
        """What the file holds now (reloaded when another process changed it); call with ``_lock`` held."""
        if self._signature() != self._seen:
            self._data = self._load()
        return self._data

    @contextlib.contextmanager
    def _exclusive(self) -> Iterator[None]:
        """This process's lock, then the lock every process takes around a read-modify-write of the file."""
        with self._lock:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(
                self._path.with_name(self._path.name + ".lock"),
                os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                0o600,
            )
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                yield
            finally:
                os.close(fd)

    def get(self, key: str) -> str | None:
        with self._lock:
            return self._current().get(key)

    def has(self, key: str) -> bool:
        with self._lock:
            return key in self._current()

    def set(self, key: str, value: str) -> None:
        def put(data: dict[str, str]) -> bool:
            data[key] = value
            return True

        self._change(put)

    def set_if_absent(self, key: str, value: str) -> str:
        stored: list[str] = []

        def put(data: dict[str, str]) -> bool:
            stored.append(data.setdefault(key, value))
            return stored[0] is value

        self._change(put)
        return stored[0]

    def delete(self, key: str) -> None:
        self._change(lambda data: data.pop(key, None) is not None)

    def delete_prefix(self, prefix: str) -> None:
        def drop(data: dict[str, str]) -> bool:
            doomed = [k for k in data if k.startswith(prefix)]
            for k in doomed:
                del data[k]
            return bool(doomed)

        self._change(drop)

    def _change(self, apply: Callable[[dict[str, str]], bool]) -> None:
        """Read the file as it is now, apply the change, and write it back if ``apply`` says it changed."""
        with self._exclusive():
            data = dict(self._current())
            if apply(data):
                write_private_atomic(self._path, json.dumps(data, indent=1, sort_keys=True).encode())
                self._data = data
                self._seen = self._signature()
