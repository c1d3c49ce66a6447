"""What the browser rig modules share over a running ``rigs_server``: the module's server whose rigs reach the
module's page server under a test site's name, one rig per engine opened on first use with that site granted, and
``browser_use`` called as the owner (or as another client)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from hangar.rigs.engines.registry import RECIPES
from tests.integration.rigs_enclosure_env import ready_pack
from tests.integration.rigs_env import RigsEnv, rigs_server
from tests.support.pages import PageServer
from tests.support.rpc import RpcClient


def site_env_fixture(site: str, *, site_on_pages: bool = False, **settings: Any) -> Any:
    """``env``: the module's rigs server, whose rigs reach the module's ``pages`` server under ``site`` (port 80);
    ``site_on_pages``: the page server stands in for the product site too (reached at its loopback origin, a
    secure context). ``settings`` are the server's."""

    @pytest_asyncio.fixture(loop_scope="module", scope="module")
    async def env(pages: PageServer, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[RigsEnv]:
        overrides = {f"{site}:80": ("127.0.0.1", pages.port)}
        if site_on_pages:
            settings["site_port"] = pages.port
        async with rigs_server(tmp_path_factory.mktemp("rigs"), overrides=overrides, **settings) as running:
            yield running

    return env


class BrowserRigs:
    """One browser rig per engine, opened on first use and shared by the module's tests; each may reach ``site``."""

    def __init__(self, env: RigsEnv, site: str) -> None:
        self.env = env
        self.site = site
        self.ids: dict[str, str] = {}

    async def get(self, engine: str = "engine-a") -> str:
        if engine not in RECIPES:
            # A lost engine fails its tests (a skip would hide it): every engine the tests name is registered.
            pytest.fail(f"browser engine {engine!r} is not registered (registered: {', '.join(sorted(RECIPES))})")
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
