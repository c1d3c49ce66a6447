"""Start the real server in-process on an ephemeral loopback port, in a temporary data directory."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hangar.config import Settings
from hangar.core.clock import Clock
from hangar.core.context import AppContext
from hangar.core.part import Part
from hangar.core.principal import Role
from hangar.identity import IdentityService
from hangar.identity.creation import create_workspace
from hangar.server.app import build_server
from hangar.server.connections import ConnectionGuard, ConnectionLimits
from hangar.server.listeners import Listener
from tests.support import pg_mode
from tests.support.disks import detach_disks


@dataclass
class RunningServer:
    url: str
    ws_url: str
    ctx: AppContext
    owner_token: str
    owner_id: str
    data_dir: Path
    guard: ConnectionGuard

    async def new_user_token(
        self, workspace_id: str | None = None, role: str | Role = Role.member, name: str = "user"
    ) -> str:
        """A new user (member of ``workspace_id`` at ``role`` when given) and a device credential for them."""
        user = await self.ctx.service(IdentityService).create_user(email=f"{name}@example.test", display_name=name)
        if workspace_id is not None:
            await self.ctx.service(IdentityService).add_member(
                workspace_id, user.id, role if isinstance(role, Role) else Role[role]
            )
        return await self.ctx.service(IdentityService).issue_device(user.id, f"{name}-device")

    async def new_workspace(self, name: str = "ws", owner_token: str | None = None) -> str:
        """A workspace owned by the server owner (or the user behind ``owner_token``)."""
        principal = await self.ctx.service(IdentityService).authenticate(owner_token or self.owner_token)
        ws = await create_workspace(self.ctx, name, principal.user_id, by=principal.label)
        return ws.id


@contextlib.asynccontextmanager
async def running_server(
    data_dir: Path,
    *,
    clock: Clock | None = None,
    parts: Sequence[Part] | None = None,
    port: int = 0,
    **settings: Any,
) -> AsyncIterator[RunningServer]:
    """``port`` 0 picks a free one; a test that restarts the server under a client passes the port it had. The
    listener is the one ``hangar serve`` runs (its protocols, connection caps and proxy-header rule)."""
    if "database_url" not in settings and (url := pg_mode.database_url_for(data_dir)) is not None:
        settings["database_url"] = url  # HANGAR_TEST_DATABASE=postgresql: one database per data directory
    cfg = Settings(data_dir=data_dir, host="127.0.0.1", port=port, **settings)
    ready: list[AppContext] = []
    app = build_server(cfg, clock=clock, parts=parts, on_ready=ready)
    guard = ConnectionGuard(ConnectionLimits.from_settings(cfg))
    server = Listener("server", app, "127.0.0.1", port, guard).make()
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
            raise RuntimeError("server stopped during start")
        await asyncio.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    # The listener's real port, as `hangar serve` knows it: the server's origin (the issuer and resource of
    # its OAuth metadata, the SAML entity) names it.
    cfg.port = port
    cfg.serve_here()  # as `hangar serve` does: the rigs it runs name where the other servers reach it
    ctx = ready[0]
    owner = await ctx.service(IdentityService).ensure_server_owner()
    token = await ctx.service(IdentityService).issue_device(owner.id, "test-owner")
    try:
        yield RunningServer(
            f"http://127.0.0.1:{port}", f"ws://127.0.0.1:{port}/rpc", ctx, token, owner.id, data_dir, guard
        )
    finally:
        server.should_exit = True
        try:
            await asyncio.wait_for(task, 30)
        finally:
            detach_disks(data_dir)
