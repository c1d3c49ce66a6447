"""The application context handed to every part: settings, clock, data directory, databases, secrets, events,
audit, and a typed registry of the services parts provide to each other (identity is one of them: the kernel
knows no part)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeVar

from hangar.config import Settings
from hangar.core.audit import AuditLog
from hangar.core.clock import Clock
from hangar.core.datadir import DataDir
from hangar.core.db import Databases
from hangar.core.events import EventBus
from hangar.core.metrics import Metrics
from hangar.core.sealed import SealedSecretFolder, SealedSecrets
from hangar.core.secretfiles import FileSecretFolder, SecretFolder
from hangar.core.secrets import Secrets

T = TypeVar("T")


@dataclass(eq=False)
class AppContext:
    settings: Settings
    clock: Clock
    datadir: DataDir
    dbs: Databases
    secrets: Secrets
    bus: EventBus
    audit: AuditLog
    # The server's metrics (``hangar.core.metrics``); a command's context counts nothing.
    metrics: Metrics = field(default_factory=lambda: Metrics(enabled=False))
    _services: dict[type[Any], Any] = field(default_factory=dict)
    # On PostgreSQL, the sealed secrets ``secrets`` and the secret folders keep (None: files, on SQLite).
    sealed: SealedSecrets | None = None

    def secret_folder(self, folder: str) -> SecretFolder:
        """A workspace's secret folder ``folder`` as this install keeps it (``hangar.core.secretfiles``)."""
        if self.sealed is not None:
            return SealedSecretFolder(self.sealed, folder)
        return FileSecretFolder(self.datadir, folder)

    def provide(self, service: T, as_type: type[T] | None = None) -> T:
        """Register a part's service under its class (or ``as_type``) for other parts to look up."""
        key = as_type or type(service)
        if key in self._services:
            raise ValueError(f"service {key.__name__} is provided twice")
        self._services[key] = service
        return service

    def service(self, cls: type[T]) -> T:
        try:
            svc = self._services[cls]
        except KeyError:
            raise LookupError(f"no part provides {cls.__name__}") from None
        if not isinstance(svc, cls):
            raise TypeError(f"service registered as {cls.__name__} is a {type(svc).__name__}")
        return svc

    def maybe_service(self, cls: type[T]) -> T | None:
        svc = self._services.get(cls)
        return svc if isinstance(svc, cls) else None
