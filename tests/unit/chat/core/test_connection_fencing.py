"""The registry's side of the claims: a holder stops dialling when its claim is lost, or cannot be renewed before
2/3 of the lease (the fence, tested on both sides), and dials again when another process stored new credentials;
a process that does not hold the claim never dials."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, cast

from hangar.chat.claims import ConnectionClaims, Holder
from hangar.chat.connections import ChatConnection, ConnectionRegistry
from hangar.core.context import AppContext
from hangar.identity import Workspace
from tests.unit.chat.core.recorded import Recorded

WS = Workspace("ws-1", "Acme", datetime(2026, 1, 1, tzinfo=UTC), "u-1")
P = "chatprovider"
CREDS = {"botToken": "xoxb-1"}


class Claims(ConnectionClaims):
    """The claims without a database: ``holder_elsewhere`` refuses the claim; ``renewal`` scripts the renewal."""

    def __init__(self, ttl: float) -> None:
        super().__init__(cast(AppContext, None), Holder("h:1:x", "h", 1), ttl)
        self.holder_elsewhere = False
        self.renewal: Any = 0  # a generation, None (lost), an exception to raise, or "hang"
        self.bumped = 0

    async def claim(self, workspace_id: str, provider: str) -> int | None:
        return None if self.holder_elsewhere else 0

    async def bump(self, workspace_id: str, provider: str) -> None:
        self.bumped += 1

    async def renew(self, workspace_id: str, provider: str, **_: Any) -> int | None:
        if self.renewal == "hang":
            await asyncio.sleep(3600)
        if isinstance(self.renewal, Exception):
            raise self.renewal
        return cast(int | None, self.renewal)

    async def release(self, workspace_id: str, provider: str) -> None:
        return None


def registry(claims: Claims) -> tuple[ConnectionRegistry, list[Recorded]]:
    made: list[Recorded] = []

    async def factory(ws: Workspace, provider: str, creds: Mapping[str, str]) -> ChatConnection:
        made.append(Recorded(ws, creds))
        return made[-1]

    return ConnectionRegistry(factory, claims), made


def stored(ws: Workspace, provider: str) -> Mapping[str, str] | None:
    return CREDS


async def test_a_process_that_does_not_hold_the_claim_never_dials_and_tells_the_holder_of_new_credentials() -> None:
    claims = Claims(ttl=60)
    claims.holder_elsewhere = True
    reg, made = registry(claims)
    assert await reg.restart(WS, P, CREDS, new_credentials=False) is None  # at a start: only found them
    assert made == [] and claims.bumped == 0
    assert await reg.restart(WS, P, CREDS) is None  # chat.connect here: the holder dials again with them
    assert made == [] and claims.bumped == 1


async def test_a_renewal_failing_before_the_fence_keeps_the_connection_and_one_at_the_fence_stops_it() -> None:
    claims = Claims(ttl=60)  # fence at 40 s after the last good renewal began; looks every 20 s
    reg, made = registry(claims)
    await reg.restart(WS, P, CREDS)
    claims.renewal = OSError("the database is away")
    await reg.renew_all(stored)  # just after the claim: the next look still comes before the fence
    assert reg.get(WS.id, P) is made[0] and not made[0].stopped
    # The same failure when the next look would come after the fence: stopped now.
    reg._held[(WS.id, P)].renewed -= 20.001
    await reg.renew_all(stored)
    assert made[0].stopped and reg.get(WS.id, P) is None


async def test_a_renewal_that_hangs_is_cut_at_the_fence() -> None:
    claims = Claims(ttl=0.3)  # fence 0.2 s after the claim
    reg, made = registry(claims)
    await reg.restart(WS, P, CREDS)
    claims.renewal = "hang"
    await reg.renew_all(stored)  # returns when the fence comes, not when the database answers
    assert made[0].stopped and reg.get(WS.id, P) is None


async def test_a_claim_lost_stops_the_connection_and_a_new_generation_dials_again() -> None:
    claims = Claims(ttl=60)
    reg, made = registry(claims)
    await reg.restart(WS, P, CREDS)
    claims.renewal = 0
    await reg.renew_all(stored)
    assert len(made) == 1 and not made[0].stopped
    claims.renewal = 1  # another process stored new credentials
    await reg.renew_all(stored)
    assert made[0].stopped and reg.get(WS.id, P) is made[1]
    claims.renewal = None  # the row was taken after a lapse, or removed by a disconnect
    await reg.renew_all(stored)
    assert made[1].stopped and reg.get(WS.id, P) is None
    await reg.renew_all(stored)  # nothing held any more: nothing renewed or started
    assert len(made) == 2
