"""Identity records as the rest of the server sees them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from hangar.core.principal import Role


@dataclass(frozen=True)
class User:
    id: str
    email: str | None
    display_name: str
    created_at: datetime
    deactivated_at: datetime | None
    sso_issuer: str | None
    sso_subject: str | None

    @property
    def active(self) -> bool:
        return self.deactivated_at is None


@dataclass(frozen=True)
class Workspace:
    id: str
    name: str
    created_at: datetime
    created_by: str


@dataclass(frozen=True)
class Member:
    user_id: str
    display_name: str
    email: str | None
    role: Role
    joined_at: datetime


@dataclass(frozen=True)
class DeviceScope:
    """What a credential reaches beyond "everything its holder may do": one workspace, one space of it, reads
    only, named ops, a deadline, the agent it speaks for, the OAuth client it was issued to. The default is the
    whole holder."""

    workspace_id: str | None = None
    read_only: bool = False
    tools: frozenset[str] | None = None
    expires_at: datetime | None = None
    agent_id: str | None = None
    client_id: str | None = None
    space_id: str | None = None  # within ``workspace_id``


@dataclass(frozen=True)
class Device:
    id: str
    user_id: str
    name: str
    created_at: datetime
    last_used_at: datetime
    revoked_at: datetime | None
    scope: DeviceScope = DeviceScope()


@dataclass(frozen=True)
class SessionPolicy:
    """Bounds on a device credential, in minutes; 0 means unset."""

    max_age_minutes: int = 0
    idle_timeout_minutes: int = 0

    def violation(self, device: Device, now: datetime, *, last_used_at: datetime | None = None) -> str | None:
        """Why ``device`` may no longer be used at ``now``, or None. ``last_used_at``: its last use when that is
        later than the one its record holds (one this process has not written back yet)."""
        if device.scope.expires_at is not None and now >= device.scope.expires_at:
            return "the credential has expired"
        if self.max_age_minutes and now - device.created_at >= timedelta(minutes=self.max_age_minutes):
            return "the credential is older than the session policy's maximum age"
        last_use = device.last_used_at if last_used_at is None else last_used_at
        if self.idle_timeout_minutes and now - last_use >= timedelta(minutes=self.idle_timeout_minutes):
            return "the credential was idle longer than the session policy allows"
        return None
