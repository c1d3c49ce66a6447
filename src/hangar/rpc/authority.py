"""What the RPC layer asks of whoever decides access: who a credential belongs to, and which role a user holds in
a workspace. The identity part answers; the server composition hands it over, so this layer never imports a part."""

from __future__ import annotations

from typing import Protocol

from hangar.core.principal import Principal, Role


class Authority(Protocol):
    async def authenticate(self, token: str, *, touch: bool = True) -> Principal:
        """The principal of a device credential, checked on this use (raises ``Unauthenticated``)."""
        ...

    async def recheck_device(self, device_id: str) -> Principal:
        """The principal of a credential known by id, checked again without counting as a use (its token may
        have rotated since it was first presented)."""
        ...

    async def role_of(self, workspace_id: str, user_id: str, *, as_of: int | None = None) -> Role | None:
        """The user's role in the workspace, or ``None`` when they are not a member."""
        ...

    async def workspace_deleted(self, workspace_id: str) -> bool:
        """Whether the server's record says the workspace was deleted (to tell a former member why they are
        refused, rather than that they are not a member)."""
        ...

    async def authority_stamp(self) -> int:
        """A counter that changes whenever anything an access decision reads changes."""
        ...
