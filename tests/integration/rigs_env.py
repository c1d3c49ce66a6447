"""The real server with the rigs part on real enclosures, for the rigs manager and ops tests.

Rigs boot from the terminal image pack the enclosure tests share (``rigs_enclosure_env``: built once per
machine, keyed by its toolset revision), so each test gets its own data directory but no rebuild. Where this
host cannot run enclosures the tests skip with the backend's own reason.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hangar.core.clock import Clock
from hangar.rigs.backends.enclosure import EnclosureBackend
from hangar.rigs.lifecycle.manager import RigManager
from hangar.rigs.part import make_rigs_part
from hangar.server.parts import all_parts
from hangar.workspace.part import WORKSPACE_PART
from tests.integration.rigs_enclosure_env import PACKS, ready_pack
from tests.support.rpc import RpcClient
from tests.support.server import RunningServer, running_server

BOOT_BOUND_S = 300.0  # a bound against hangs only: how long a test follows a rig's boot


@dataclass
class RigsEnv:
    srv: RunningServer
    ws: str
    space: str
    client: RpcClient

    @property
    def ws_origin(self) -> str:
        return "ws" + self.srv.url.removeprefix("http")

    @property
    def manager(self) -> RigManager:
        return self.srv.ctx.service(RigManager)

    async def call(self, op: str, **args: Any) -> Any:
        return await self.client.call(op, workspace_id=self.ws, **args)

    async def new_space(self, title: str = "another") -> str:
        return str((await self.call("spaces.create", title=title))["id"])

    async def open(self, space: str | None = None) -> str:
        return await self.ready(await self.call("rig.open", space_id=space or self.space, surface="terminal"))

    async def ready(self, opened: dict[str, Any]) -> str:
        """The id of the rig ``rig.open`` answered with, once it is ready. An open answers `provisioning` when
        the boot outlasts its bounded wait (a machine under load); the rig is followed to the end of its boot,
        never failed on for being slow."""
        rig = str(opened["rigId"])
        if opened["phase"] != "ready":
            async with asyncio.timeout(BOOT_BOUND_S):
                while (row := await self.status(rig))["status"] == "provisioning":
                    await asyncio.sleep(0.2)
            assert row["status"] == "ready", row
        return rig

    async def exec(self, rig_id: str, command: str) -> Any:
        return await self.call("rig.exec", rigId=rig_id, command=command)

    async def status(self, rig_id: str) -> dict[str, Any]:
        rows = await self.call("rig_list", includeClosed=True)
        return next(r for r in rows if r["rigId"] == rig_id)

    async def events(self, type_name: str) -> list[dict[str, Any]]:
        await self.srv.ctx.bus.drain()
        return [e["payload"] for e in await self.call("events.list", types=[type_name])]


def rigs_parts(overrides: Mapping[str, tuple[str, int]] | None = None) -> list[Any]:
    """The server's parts with the rigs part on the shared pack; ``overrides`` lets the egress gate reach test
    servers on host loopback under allow-listed names (``"name:port" -> (address, port)``)."""
    part = make_rigs_part(
        lambda app: EnclosureBackend(app.datadir.sub("rigs"), packs_root=PACKS, upstream_overrides=overrides)
    )
    parts = [p for p in all_parts() if p.name != "rigs"]
    if not any(p.name == WORKSPACE_PART.name for p in parts):
        parts.append(WORKSPACE_PART)
    return [*parts, part]


@contextlib.asynccontextmanager
async def rigs_server(
    tmp_path: Path,
    *,
    clock: Clock | None = None,
    overrides: Mapping[str, tuple[str, int]] | None = None,
    **settings: Any,
) -> AsyncIterator[RigsEnv]:
    """``tmp_path`` is unused on purpose: rig runtime paths hold UNIX sockets (at most 108 bytes), so the
    data directory is a short one under /tmp. ``settings`` are the server's (``web_dist`` for browser tests)."""
    await ready_pack()
    with tempfile.TemporaryDirectory(prefix="hr-", dir="/tmp") as short:
        async with running_server(Path(short), clock=clock, parts=rigs_parts(overrides), **settings) as srv:
            ws = await srv.new_workspace()
            async with RpcClient(srv.ws_url, srv.owner_token) as client:
                space = (await client.call("spaces.create", workspace_id=ws, title="rig tests"))["id"]
                yield RigsEnv(srv, ws, space, client)
