"""Link codes in the workspace's database, on both dialects and the injected clock: shape, lifetime on both sides of
the line, one use (two redemptions at once: one wins), one code per member, identical failures, the limit on each
chat account's wrong codes, and only the code's hash stored."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import cast

import pytest
import sqlalchemy as sa

from hangar.chat.link_codes import CODE_ALPHABET, LINK_FAILURES, LinkCodes
from hangar.chat.tables import chat_link_codes
from hangar.core.clock import FakeClock
from hangar.core.context import AppContext
from hangar.core.ids import token_hash
from hangar.httpkit.ratelimit import TooManyAttempts
from hangar.identity import IdentityService
from tests.support.dialects import DIALECTS, app_on, database_url

P = "chatprovider"
ME = ("T1", "U1")  # the chat account trying codes
WRONG = "ZZZZZZ"


@pytest.fixture(params=DIALECTS)
async def app(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[AppContext]:
    async with app_on(tmp_path, database_url(str(request.param), request)) as ctx:
        yield ctx


async def workspace(app: AppContext, name: str = "Team") -> str:
    identity = app.service(IdentityService)
    owner = await identity.create_user(email=f"{name.lower()}@example.com", display_name=name)
    ws = (await identity.create_workspace(name, owner.id)).id
    await app.dbs.create_workspace(ws)
    return ws


def clock_of(app: AppContext) -> FakeClock:
    return cast(FakeClock, app.clock)


def advance_wall(clock: FakeClock, delta: timedelta) -> None:
    clock._now += delta  # the wall clock only: codes expire by ``now``


async def rows(app: AppContext, ws: str) -> list[sa.RowMapping]:
    engine = await app.dbs.workspace(ws)
    async with engine.connect() as conn:
        return list((await conn.execute(sa.select(chat_link_codes))).mappings().all())


def wrong_for(code: str) -> str:
    return WRONG if code != WRONG else "YYYYYY"


async def test_a_code_has_six_characters_lasts_fifteen_minutes_and_only_its_hash_is_stored(app: AppContext) -> None:
    ws = await workspace(app)
    codes = LinkCodes(app)
    for n in range(20):
        code, expires = await codes.mint(ws, P, f"u{n}")
        assert len(code) == 6 and set(code) <= set(CODE_ALPHABET)
        assert expires == app.clock.now() + timedelta(minutes=15)
    assert "0" not in CODE_ALPHABET and "O" not in CODE_ALPHABET and "1" not in CODE_ALPHABET
    code, _ = await codes.mint(ws, P, "u1")
    (row,) = [r for r in await rows(app, ws) if r["user_id"] == "u1"]
    assert row["code_hash"] == token_hash(code) and code not in {str(v) for v in row.values()}


async def test_a_code_serves_once_case_insensitively(app: AppContext) -> None:
    ws = await workspace(app)
    codes = LinkCodes(app)
    code, _ = await codes.mint(ws, P, "u1")
    assert await codes.redeem(ws, P, f" {code.lower()} ", ME) == "u1"
    assert await codes.redeem(ws, P, code, ME) is None
    assert await rows(app, ws) == []


async def test_two_redemptions_at_once_one_wins(app: AppContext) -> None:
    ws = await workspace(app)
    codes, elsewhere = LinkCodes(app), LinkCodes(app)  # as two server processes, each with its own connections
    for n in range(5):
        code, _ = await codes.mint(ws, P, f"u{n}")
        got = await asyncio.gather(codes.redeem(ws, P, code, ME), elsewhere.redeem(ws, P, code, ("T1", "U2")))
        assert sorted(got, key=str) == [None, f"u{n}"]


async def test_a_code_works_until_just_before_fifteen_minutes_and_not_at_them(app: AppContext) -> None:
    ws = await workspace(app)
    clock = clock_of(app)
    codes = LinkCodes(app)
    early, _ = await codes.mint(ws, P, "u1")
    advance_wall(clock, timedelta(minutes=15) - timedelta(milliseconds=1))
    assert await codes.redeem(ws, P, early, ME) == "u1"
    late, _ = await codes.mint(ws, P, "u2")
    advance_wall(clock, timedelta(minutes=15))
    assert await codes.redeem(ws, P, late, ME) is None
    assert await rows(app, ws) == []  # the expired row went with the attempt


async def test_minting_again_invalidates_the_members_previous_code_only(app: AppContext) -> None:
    ws, ws2 = await workspace(app), await workspace(app, "Other")
    codes = LinkCodes(app)
    first, _ = await codes.mint(ws, P, "u1")
    other, _ = await codes.mint(ws, P, "u2")
    elsewhere, _ = await codes.mint(ws2, P, "u1")
    other_provider, _ = await codes.mint(ws, "otherprovider", "u1")
    second, _ = await codes.mint(ws, P, "u1")
    assert len(await rows(app, ws)) == 3  # one per member and provider
    assert await codes.redeem(ws, P, first, ME) is None
    assert await codes.redeem(ws, P, second, ME) == "u1"
    assert await codes.redeem(ws, P, other, ME) == "u2"
    assert await codes.redeem(ws2, P, elsewhere, ME) == "u1"
    assert await codes.redeem(ws, "otherprovider", other_provider, ME) == "u1"


async def test_mints_at_once_leave_one_code_per_member(app: AppContext) -> None:
    ws = await workspace(app)
    minted = await asyncio.gather(*(LinkCodes(app).mint(ws, P, "u1") for _ in range(4)))
    assert len(await rows(app, ws)) == 1
    codes = LinkCodes(app)
    assert [await codes.redeem(ws, P, code, ME) for code, _ in minted].count("u1") == 1


async def test_a_code_drawn_twice_is_drawn_again(app: AppContext, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = await workspace(app)
    draws = itertools.chain("222222", "222222", "333333")
    monkeypatch.setattr("hangar.chat.link_codes.secrets.choice", lambda _alphabet: next(draws))
    codes = LinkCodes(app)
    assert (await codes.mint(ws, P, "u1"))[0] == "222222"
    assert (await codes.mint(ws, P, "u2"))[0] == "333333"
    assert await codes.redeem(ws, P, "222222", ME) == "u1"
    assert await codes.redeem(ws, P, "333333", ME) == "u2"


async def test_foreign_workspace_and_wrong_provider_fail_like_unknown_and_leave_the_code_usable(
    app: AppContext,
) -> None:
    ws, ws2 = await workspace(app), await workspace(app, "Other")
    codes = LinkCodes(app)
    code, _ = await codes.mint(ws, P, "u1")
    answers = {
        await codes.redeem(ws2, P, code, ME),
        await codes.redeem(ws, "otherprovider", code, ME),
        await codes.redeem(ws, P, wrong_for(code), ME),
        await codes.redeem(ws, P, "", ME),
    }
    assert answers == {None}
    assert await codes.redeem(ws, P, code, ME) == "u1"


async def test_a_chat_account_may_fail_five_times_then_waits_and_a_good_code_costs_nothing(app: AppContext) -> None:
    ws, ws2 = await workspace(app), await workspace(app, "Other")
    clock = clock_of(app)
    codes = LinkCodes(app)
    code, _ = await codes.mint(ws, P, "u1")
    assert LINK_FAILURES.burst == 5
    # Good codes give their attempt back: any number of them.
    for n in range(8):
        good, _ = await codes.mint(ws, P, f"g{n}")
        assert await codes.redeem(ws, P, good, ME) == f"g{n}"
    # Five wrong codes are answered (as wrong); the sixth attempt is refused unread, even with the right code.
    for _ in range(5):
        assert await codes.redeem(ws, P, wrong_for(code), ME) is None
    with pytest.raises(TooManyAttempts) as refused:
        await codes.redeem(ws, P, code, ME)
    assert refused.value.retry == 180 and "wrong link codes" in refused.value.message
    # Another chat account, and the same account in another workspace, are not held to it.
    assert await codes.redeem(ws, P, code, ("T1", "U2")) == "u1"
    other, _ = await codes.mint(ws2, P, "u1")
    assert await codes.redeem(ws2, P, other, ME) == "u1"
    # Three minutes later the account has one more attempt.
    clock.advance(179)
    with pytest.raises(TooManyAttempts):
        await codes.redeem(ws, P, WRONG, ME)
    clock.advance(2)
    again, _ = await codes.mint(ws, P, "u3")
    assert await codes.redeem(ws, P, again, ME) == "u3"
