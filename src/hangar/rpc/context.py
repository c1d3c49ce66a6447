"""What an op handler is given: who is calling, in which workspace, with which role."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.core.context import AppContext
from hangar.core.metrics import Stopwatch
from hangar.core.principal import Principal, Role
from hangar.errors import WorkspaceRequired
from hangar.rpc.registry import OpSpec

if TYPE_CHECKING:
    # Only the dispatcher makes one; the relay module loads httpx and websockets, which a command never needs.
    from hangar.rpc.relay import Relayable


@dataclass(frozen=True)
class OpContext:
    app: AppContext
    principal: Principal
    spec: OpSpec
    workspace_id: str | None
    role: Role | None
    request_id: str | int | None = None
    door: str = "socket"  # the way the call came in (``socket``, ``mcp``), recorded with its audit rows
    # Tells the caller how a long op is going, where the door and the caller asked for it (MCP progress).
    progress: Callable[[str], Awaitable[None]] | None = None
    # Started when the dispatcher began its checks: the call's latency, counted when it ends.
    clock: Stopwatch | None = field(default=None, compare=False)
    # Set for a call carrying a credential of its own: what relaying it to another server needs.
    relayable: Relayable | None = field(default=None, compare=False, repr=False)

    @property
    def ws(self) -> str:
        """The workspace id of a workspace-scoped op (the dispatcher guarantees it is present)."""
        if self.workspace_id is None:
            raise WorkspaceRequired(f"{self.spec.name} needs workspace_id")
        return self.workspace_id

    async def db(self) -> AsyncEngine:
        return await self.app.dbs.workspace(self.ws)

    async def report(self, message: str) -> None:
        """Say how the op is going (a pack being built, a step under way); nothing when nobody listens."""
        if self.progress is not None:
            await self.progress(message)

    async def audit(self, action: str, target: str, details: dict[str, Any] | None = None) -> int:
        return await self.app.audit.append(
            self.ws, principal=self.principal.label, action=action, target=target, details=details
        )
