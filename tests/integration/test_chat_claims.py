"""The chat connection claims and the shared inbound dedupe on both database dialects: who may hold a workspace's
connection, the lease's expiry on both sides of the line, fencing by renewal, and the first sight of an event."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import cast

import pytest

from hangar.chat.claims import ConnectionClaims, Holder, InboundSeen
from hangar.core.clock import FakeClock
from hangar.core.context import AppContext
from hangar.identity import IdentityService
from tests.support.dialects import DIALECTS, app_on, database_url

P = "chatprovider"
TTL = 15.0


@pytest.fixture(params=DIALECTS)
async def app(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[AppContext]:
    async with app_on(tmp_path, database_url(str(request.param), request)) as ctx:
        yield ctx


async def workspace(app: AppContext) -> str:
    identity = app.service(IdentityService)
    owner = await identity.create_user(email="ada@example.com", display_name="Ada")
    ws = (await identity.create_workspace("Team", owner.id)).id
    await app.dbs.create_workspace(ws)
    return ws


def two(app: AppContext) -> tuple[ConnectionClaims, ConnectionClaims]:
    return (
        ConnectionClaims(app, Holder("host-a:1:x", "host-a", 1), TTL),
        ConnectionClaims(app, Holder("host-b:2:y", "host-b", 2), TTL),
    )


async def test_one_holder_at_a_time_and_a_lapsed_lease_is_taken_at_its_expiry_not_before(app: AppContext) -> None:
    ws = await workspace(app)
    clock = cast(FakeClock, app.clock)
    a, b = two(app)
    assert await a.claim(ws, P) == 0
    assert await b.claim(ws, P) is None  # held and live: refused
    held = await b.read(ws, P)
    assert held is not None and (held.holder.host, held.holder.pid, held.state) == ("host-a", 1, "connecting")
    # a stops renewing (killed): just before its lease ends b is still refused, at the end it takes over.
    clock.advance(TTL - 0.001)
    assert await b.claim(ws, P) is None
    assert (await a.read(ws, P)) is not None
    clock.advance(0.001)
    assert await a.read(ws, P) is None  # the status shows no holder once the lease ran out
    assert await b.claim(ws, P) == 0
    # The old holder's renewal finds the row no longer its own: it must stop dialling.
    assert await a.renew(ws, P, state="connected", error=None, streaming_available=True) is None
    assert await b.renew(ws, P, state="connected", error=None, streaming_available=True) == 0
    now = await a.read(ws, P)
    assert now is not None and now.holder.host == "host-b" and now.state == "connected" and now.streaming_available


async def test_renewal_keeps_the_lease_and_new_credentials_bump_the_generation(app: AppContext) -> None:
    ws = await workspace(app)
    clock = cast(FakeClock, app.clock)
    a, b = two(app)
    assert await a.claim(ws, P) == 0
    for _ in range(5):  # renewed every third of the lease: never taken
        clock.advance(TTL / 3)
        assert await a.renew(ws, P, state="connected", error=None, streaming_available=True) == 0
        assert await b.claim(ws, P) is None
    await b.bump(ws, P)  # another server stored new credentials
    assert await a.renew(ws, P, state="connected", error=None, streaming_available=True) == 1
    # A clean stop lets the connection go at once (the row goes, and the next holder starts it anew).
    await a.release(ws, P)
    assert await b.claim(ws, P) == 0
    # A disconnect removes the claim whoever holds it: the holder's next renewal says it is gone.
    await a.forget(ws, P)
    assert await b.renew(ws, P, state="connected", error=None, streaming_available=True) is None


async def test_an_inbound_event_is_seen_first_once_across_processes_and_old_ones_are_pruned(app: AppContext) -> None:
    ws = await workspace(app)
    clock = cast(FakeClock, app.clock)
    first, second = InboundSeen(app), InboundSeen(app)  # two processes' views of one database
    assert await first.first_sight(ws, P, "Ev001") is True
    assert await second.first_sight(ws, P, "Ev001") is False
    assert await first.first_sight(ws, P, "Ev001") is False
    assert await second.first_sight(ws, P, "envelope:Ev001") is True  # a slash command's own key
    assert await first.first_sight(ws, "otherprovider", "Ev001") is True
    clock.advance(3599)
    await first.prune(ws)
    assert await second.first_sight(ws, P, "Ev001") is False  # kept an hour
    clock.advance(2)
    await first.prune(ws)
    assert await second.first_sight(ws, P, "Ev001") is True
