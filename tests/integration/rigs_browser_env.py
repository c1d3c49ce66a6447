"""What the browser rig modules share over a running ``rigs_server``: one rig per engine opened on first use with
the module's test site granted, and ``browser_use`` called as the owner (or as another client)."""

from __future__ import annotations

from typing import Any

import pytest

from hangar.rigs.engines.registry import RECIPES
from tests.integration.rigs_enclosure_env import ready_pack
from tests.integration.rigs_env import RigsEnv
from tests.support.rpc import RpcClient


class BrowserRigs:
    """One browser rig per engine, opened on first use and shared by the module's tests; each may reach ``site``."""

    def __init__(self, env: RigsEnv, site: str) -> None:
        self.env = env
        self.site = site
        self.ids: dict[str, str] = {}

    async def get(self, engine: str = "engine-a") -> str:
        if engine not in RECIPES:
            pytest.skip(f"{engine}'s client is not on this branch yet")
        if engine not in self.ids:
            # The engine's pack is ready first (ready_pack follows a build under way elsewhere to its end), so
            # what follows waits for the boot alone.
            await ready_pack(engine)
            reply = await self.env.call("rig.open", space_id=self.env.space, surface="browser", engine=engine)
            rig = await self.env.ready(reply)
            await self.env.call("rig.grantHosts", rigId=rig, hosts=[self.site])
            self.ids[engine] = rig
        return self.ids[engine]


async def use(env: RigsEnv, rig: str, client: RpcClient | None = None, **action: Any) -> dict[str, Any]:
    """``browser_use`` with ``action`` on ``rig``, as the owner unless ``client`` is given."""
    reply = await (client or env.client).call("browser_use", workspace_id=env.ws, rigId=rig, action=action)
    assert isinstance(reply, dict)
    return reply
