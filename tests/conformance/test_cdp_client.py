"""The DevTools protocol client (``engines/cdp.py``) against a real headless Chromium: it dials the endpoint it
is given whatever authority the engine advertises (a rig's forward), answers commands, filters events by
session, translates the engine's errors into ``hangar.errors``, and reports the engine going away as
``Unavailable`` to callers and subscribers alike."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from hangar.errors import Internal, InvalidArgs, NotFound, Refused, Unavailable
from hangar.rigs.engines.chromium.cdp import CdpConnection, CommandFailed
from hangar.rigs.engines.chromium.session import CdpSession
from hangar.rigs.engines.launch import Endpoint
from tests.support.chromium import headless_chromium

pytestmark = pytest.mark.slow

GUARD_S = 20.0  # a bound against hangs only


@pytest_asyncio.fixture
async def endpoint(tmp_path: Path) -> AsyncIterator[Endpoint]:
    async with headless_chromium(tmp_path / "profile") as address:
        host, port = address.rsplit(":", 1)
        # The authority names a port nothing listens on, as a guest port seen through a rig's forward would.
        yield Endpoint(host, int(port), f"{host}:9")


async def test_commands_events_and_errors(endpoint: Endpoint) -> None:
    conn = await CdpConnection.connect(endpoint)
    try:
        version = await conn.call("Browser.getVersion")
        assert "Chrome" in version["product"]
        targets = await conn.call("Target.getTargets")
        page = next(t for t in targets["targetInfos"] if t["type"] == "page")
        attached = await conn.call("Target.attachToTarget", {"targetId": page["targetId"], "flatten": True})
        session = attached["sessionId"]
        other = conn.subscribe(("Page.loadEventFired",), "another-session")
        with conn.subscribe(("Page.loadEventFired",), session) as loads:
            await conn.call("Page.enable", session_id=session)
            await conn.call("Page.navigate", {"url": "data:text/html,<title>x</title>"}, session)
            event = await loads.get(GUARD_S)
            assert event.method == "Page.loadEventFired" and event.session_id == session
        assert other.pending() is None  # another session's subscription saw nothing
        other.close()

        with pytest.raises(Internal, match=r"No\.suchMethod"):
            await conn.call("No.suchMethod")
        with pytest.raises(InvalidArgs, match=r"Target\.attachToTarget"):
            await conn.call("Target.attachToTarget", {"targetId": 7})
        with pytest.raises(NotFound, match="No target"):
            await conn.call("Target.attachToTarget", {"targetId": "no-such-target"})
        with pytest.raises(CommandFailed, match=r"Page\.navigate") as refused:
            await conn.call("Page.navigate", {"url": ""}, session)
        assert isinstance(refused.value, Refused)
        assert (await conn.call("Browser.getVersion"))["product"] == version["product"]  # still usable
    finally:
        await conn.aclose()
        await conn.aclose()
    with pytest.raises(Unavailable):
        await conn.call("Browser.getVersion")


async def test_a_closed_page_fails_its_session_at_once(endpoint: Endpoint) -> None:
    conn = await CdpConnection.connect(endpoint)
    try:
        created = await conn.call("Target.createTarget", {"url": "about:blank"})
        attached = await conn.call("Target.attachToTarget", {"targetId": created["targetId"], "flatten": True})
        session = attached["sessionId"]
        loads = conn.subscribe(("Page.loadEventFired",), session)
        await conn.call("Target.closeTarget", {"targetId": created["targetId"]})
        with pytest.raises(Unavailable, match="page was closed"):
            await asyncio.wait_for(loads.get(), GUARD_S)
        with pytest.raises(Unavailable, match="page was closed"):
            await conn.call("Runtime.evaluate", {"expression": "1"}, session)
        assert "Chrome" in (await conn.call("Browser.getVersion"))["product"]  # the browser itself is fine
    finally:
        await conn.aclose()


async def test_the_engine_going_away_is_unavailable_everywhere(endpoint: Endpoint) -> None:
    session = await CdpSession.open(endpoint, (800, 600), "about:blank")
    conn = await CdpConnection.connect(endpoint)  # a second client, which closes the browser
    waiting = conn.subscribe(("Page.loadEventFired",))
    try:
        assert await session.viewport() == (800, 600)
        await conn.call("Browser.close")
        with pytest.raises(Unavailable):
            await asyncio.wait_for(waiting.get(), GUARD_S)
        with pytest.raises(Unavailable):
            await asyncio.wait_for(session.current(), GUARD_S)
    finally:
        await session.aclose()
        await session.aclose()
        await conn.aclose()


async def test_nothing_listening_is_unavailable(tmp_path: Path) -> None:
    async with headless_chromium(tmp_path / "profile") as address:
        host, port = address.rsplit(":", 1)
    with pytest.raises(Unavailable, match="DevTools"):
        await CdpConnection.connect(Endpoint(host, int(port), address))


async def test_commands_sent_together_answer_in_order_and_fail_as_one_would(endpoint: Endpoint) -> None:
    conn = await CdpConnection.connect(endpoint)
    try:
        version, targets = await conn.call_all([("Browser.getVersion", {}), ("Target.getTargets", {})])
        assert "Chrome" in version["product"] and any(t["type"] == "page" for t in targets["targetInfos"])
        # A failing command among them fails the batch with its own error; the ones after it still ran.
        page = next(t for t in targets["targetInfos"] if t["type"] == "page")
        with pytest.raises(Internal, match=r"No\.suchMethod"):
            await conn.call_all(
                [
                    ("Target.getTargets", {}),
                    ("No.suchMethod", {}),
                    ("Target.activateTarget", {"targetId": page["targetId"]}),
                ]
            )
        assert not conn._pending  # nothing is left waiting for an answer
        assert (await conn.call("Browser.getVersion"))["product"] == version["product"]
    finally:
        await conn.aclose()
