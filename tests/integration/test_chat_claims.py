"""The chat connection claims and the shared inbound record on both database dialects: who may hold a workspace's
connection, the lease's expiry on both sides of the line, fencing by renewal, and inbound events handled at least
once and one at a time."""

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


EV = '{"type": "message", "event_id": "Ev001"}'  # what is kept to handle it again (opaque to the store)


async def test_an_inbound_event_is_handled_by_one_at_a_time_and_copies_of_a_handled_one_are_dropped(
    app: AppContext,
) -> None:
    ws = await workspace(app)
    clock = cast(FakeClock, app.clock)
    first, second = InboundSeen(app, TTL), InboundSeen(app, TTL)  # two processes' views of one database
    assert await first.receive(ws, P, "Ev001", EV, "a") is True
    assert await second.receive(ws, P, "Ev001", EV, "b") is False  # claimed by a live handler: a copy
    assert await first.receive(ws, P, "Ev001", EV, "a") is False
    assert await second.receive(ws, P, "envelope:Ev001", EV, "b") is True  # a slash command's own key
    assert await first.receive(ws, "otherprovider", "Ev001", EV, "a") is True
    await first.handled(ws, P, "Ev001")
    clock.advance(TTL + 1)
    assert await second.receive(ws, P, "Ev001", EV, "b") is False  # handled: never again
    assert await second.take(ws, P, "Ev001", "b") is False
    assert ("Ev001", EV) not in await second.orphans(ws, P)
    clock.advance(3599 - TTL - 1)
    await first.prune(ws)
    assert await second.receive(ws, P, "Ev001", EV, "b") is False  # kept an hour
    clock.advance(2)
    await first.prune(ws)
    assert await second.receive(ws, P, "Ev001", EV, "b") is True


async def test_an_event_whose_handler_died_is_taken_by_one_other_once_its_claim_has_run_out(app: AppContext) -> None:
    ws = await workspace(app)
    clock = cast(FakeClock, app.clock)
    dead, b, c = InboundSeen(app, TTL), InboundSeen(app, TTL), InboundSeen(app, TTL)
    assert await dead.receive(ws, P, "Ev002", EV, "dead") is True  # taken, then its process died: never handled
    clock.advance(TTL - 1)
    assert await b.orphans(ws, P) == [] and await b.take(ws, P, "Ev002", "b") is False  # its claim stands
    clock.advance(1)
    assert await b.orphans(ws, P) == [("Ev002", EV)]
    assert await b.take(ws, P, "Ev002", "b") is True
    assert await c.take(ws, P, "Ev002", "c") is False  # two takers racing: one wins
    assert await c.receive(ws, P, "Ev002", EV, "c") is False  # a copy while b handles it
    assert await c.orphans(ws, P) == []
    await b.handled(ws, P, "Ev002")
    clock.advance(TTL)
    assert await c.orphans(ws, P) == [] and await c.take(ws, P, "Ev002", "c") is False
