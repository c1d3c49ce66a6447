"""What the base ops answer: the server, the caller, workspaces, members, devices, users."""

from __future__ import annotations

from pydantic import Field

from hangar.core.types import Timestamp
from hangar.identity.creation import Creators
from hangar.rpc.registry import Result


class ServerInfo(Result):
    name: str
    version: str
    origin: str
    public_url: str | None
    web_client_url: str | None
    pairing_enabled: bool


class WorkspaceRef(Result):
    id: str
    name: str


class WorkspaceRole(WorkspaceRef):
    """A workspace with the caller's role in it."""

    role: str


class WorkspaceEntry(WorkspaceRole):
    created_at: Timestamp


class Me(Result):
    """The calling user, through the device credential they called with."""

    id: str
    email: str | None
    display_name: str
    is_server_owner: bool
    device_id: str
    workspaces: list[WorkspaceRole]


class MemberView(Result):
    user_id: str
    display_name: str
    email: str | None
    role: str


class OneTimeCode(Result):
    """A single-use code, redeemed at ``POST /auth/pair``."""

    code: str


class MemberRoleSet(Result):
    user_id: str
    role: str


class UserRef(Result):
    user_id: str


class DeviceView(Result):
    """A device credential, never its token; ``current`` marks the one the caller used."""

    id: str
    name: str
    created_at: Timestamp
    last_used_at: Timestamp
    revoked_at: Timestamp | None
    current: bool
    workspace_id: str | None = Field(default=None, description="the one workspace it reaches; null: all")
    read_only: bool = False
    expires_at: Timestamp | None = None
    oauth_client_id: str | None = Field(default=None, description="the OAuth client it was issued to, if any")
    space_id: str | None = Field(default=None, description="the one space of its workspace it reaches; null: all")


class DeviceRef(Result):
    device_id: str


class WorkspaceCreators(Result):
    who: Creators


class ServerUser(Result):
    id: str
    email: str | None
    display_name: str
    active: bool
    sso_issuer: str | None
