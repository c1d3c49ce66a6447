"""The fixtures every engine conformance module starts from: the page server and one engine launched on this
host, both for the whole module (a browser costs seconds to boot), and for the modules that want it, the engine
reset to the boot viewport on a given page before each test. Each module binds them to its own names:
``pages = pages_fixture()``, ``session = engine_fixture("engine-b")``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest_asyncio

from hangar.rigs.engines.hostlaunch import host_engine
from hangar.rigs.engines.session import EngineSession
from tests.support.pages import PageServer, page_server


def pages_fixture() -> Any:
    @pytest_asyncio.fixture(loop_scope="module", scope="module")
    async def pages() -> AsyncIterator[PageServer]:
        async with page_server() as server:
            yield server

    return pages


def engine_fixture(engine: str) -> Any:
    @pytest_asyncio.fixture(loop_scope="module", scope="module")
    async def session() -> AsyncIterator[EngineSession]:
        async with host_engine(engine) as launched:
            yield launched

    return session


def start_page_fixture(path: str) -> Any:
    """``s``: the module's ``browser`` at the boot viewport (1280x800) on ``path`` of the page server."""

    @pytest_asyncio.fixture(loop_scope="module")
    async def s(browser: EngineSession, pages: PageServer) -> EngineSession:
        await browser.set_viewport(1280, 800)
        await browser.navigate(pages.url(path))
        return browser

    return s
