"""The OAuth authorization server at its edges, over real HTTP against a running server: the lifetimes of codes and
refresh tokens on both sides of the line (on the injected clock), a code or refresh token presented twice at the
same moment (the two presenters held at the database's write lock, so the race is played the same way every
time), and the attempt limits of every route a stranger can reach (the budget exact: N allowed, N+1 refused, and
the refill per minute)."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from hangar.core.clock import FakeClock
from hangar.httpkit.ratelimit import BUDGETS, Budget, RateLimits
from hangar.oauth.grants import CODE_TTL, REFRESH_TTL
from hangar.sso.continuation import RETURN_PATH
from tests.integration.test_oauth_server import PARTS, REDIRECT, World, _error, _world
from tests.support.oauth import authorize_url, form, pkce, sign_in_and_decide
from tests.support.rpc import RpcClient
from tests.support.server import running_server


@pytest.fixture
async def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def world(tmp_path: Path, clock: FakeClock) -> AsyncIterator[World]:
    async with running_server(tmp_path / "data", parts=PARTS, clock=clock) as srv, httpx.AsyncClient(timeout=30) as h:
        yield await _world(srv, h)


def redeem_form(code: str, verifier: str) -> dict[str, str]:
    return {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT, "code_verifier": verifier}


# -- lifetimes ----------------------------------------------------------------------------------------------------


async def test_an_authorization_code_lives_two_minutes(world: World, clock: FakeClock) -> None:
    client = await world.client()
    code, verifier = await world.code(client)
    clock.advance(CODE_TTL.total_seconds() - 1)  # a second short of its end: redeemed
    kept = await world.token(client, **redeem_form(code, verifier))
    assert kept.status_code == 200, kept.text
    code, verifier = await world.code(client)
    clock.advance(CODE_TTL.total_seconds())  # its very end: refused, and no credential comes of it
    late = await world.token(client, **redeem_form(code, verifier))
    assert late.status_code == 400 and _error(late) == ("invalid_grant", "the authorization code has expired")
    async with RpcClient(world.srv.ws_url, world.alice) as c:  # one credential: the code redeemed in time
        assert sum(d["name"] == "Test client (OAuth)" for d in await c.call("devices.list")) == 1


async def test_a_refresh_token_lives_thirty_days(world: World, clock: FakeClock) -> None:
    client = await world.client()
    tokens = await world.grant(client)
    clock.advance(REFRESH_TTL.total_seconds() - 1)
    renewed = await world.token(client, grant_type="refresh_token", refresh_token=tokens["refresh_token"])
    assert renewed.status_code == 200, renewed.text
    assert await world.works(renewed.json()["access_token"])
    clock.advance(REFRESH_TTL.total_seconds())  # the renewed one's own thirty days, to the second
    ended = await world.token(client, grant_type="refresh_token", refresh_token=renewed.json()["refresh_token"])
    assert ended.status_code == 400
    assert _error(ended) == ("invalid_grant", "the refresh token has expired; sign in again")


# -- presented twice at the same moment -----------------------------------------------------------------------------


async def presented_together(world: World, table: str, twice: Callable[[], Awaitable[Any]]) -> Any:
    """Run ``twice`` (two requests of one token at once) while another connection holds the server database's write
    lock, and let go only once both requests have read the token's row or waited a while for the lock: a
    redemption that reads before it takes the lock shows its race here every time, one that takes the lock first
    (``BEGIN IMMEDIATE``) is serialized."""
    engine = world.srv.ctx.dbs.server.sync_engine
    read: list[str] = []

    def seen(_conn: Any, _cursor: Any, statement: str, *_rest: Any) -> None:
        if statement.lstrip().upper().startswith("SELECT") and f"FROM {table}" in statement:
            read.append(statement)

    holder = sqlite3.connect(world.srv.data_dir / "server.db", isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    sa.event.listen(engine, "before_cursor_execute", seen)
    released = threading.Event()
    try:
        both = asyncio.ensure_future(twice())
        for _ in range(40):  # up to 2 s: the server waits 10 s for a lock, so both are still waiting after
            if len(read) >= 2:
                break
            await asyncio.sleep(0.05)
        holder.execute("COMMIT")
        released.set()
        return await both
    finally:
        sa.event.remove(engine, "before_cursor_execute", seen)
        if not released.is_set():
            holder.execute("ROLLBACK")
        holder.close()


async def test_a_code_redeemed_twice_at_once_gives_no_two_token_sets(world: World) -> None:
    client = await world.client()
    code, verifier = await world.code(client)

    async def twice() -> list[httpx.Response]:
        return list(await asyncio.gather(*(world.token(client, **redeem_form(code, verifier)) for _ in range(2))))

    replies = await presented_together(world, "oauth_codes", twice)
    given = [r.json() for r in replies if r.status_code == 200]
    assert len(given) <= 1, "a code redeemed twice at once gave two token sets"
    assert all(
        _error(r)[0] == "invalid_grant" and "already used" in _error(r)[1] for r in replies if r.status_code != 200
    )
    # A code presented twice means one presenter is not the client: whatever it gave is revoked.
    for tokens in given:
        assert not await world.works(tokens["access_token"])
        again = await world.token(client, grant_type="refresh_token", refresh_token=tokens["refresh_token"])
        assert _error(again)[0] == "invalid_grant"


async def test_a_refresh_token_presented_twice_at_once_gives_no_two_token_sets(world: World) -> None:
    client = await world.client()
    tokens = await world.grant(client)

    async def twice() -> list[httpx.Response]:
        refresh = {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"]}
        return list(await asyncio.gather(*(world.token(client, **refresh) for _ in range(2))))

    replies = await presented_together(world, "oauth_refresh_tokens", twice)
    given = [r.json() for r in replies if r.status_code == 200]
    assert len(given) <= 1, "a refresh token presented twice at once gave two token sets"
    # The used token came back: the grant is revoked, whatever the first presenter got included.
    for renewed in [tokens, *given]:
        assert not await world.works(renewed["access_token"])
        again = await world.token(client, grant_type="refresh_token", refresh_token=renewed["refresh_token"])
        assert _error(again)[0] == "invalid_grant"


# -- attempt limits -----------------------------------------------------------------------------------------------


def from_address(source: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.AsyncHTTPTransport(local_address=source), timeout=30)


async def test_wrong_pairing_codes_on_the_consent_page_are_limited_and_refill_per_minute(
    world: World, clock: FakeClock
) -> None:
    budget = BUDGETS["pair"]
    client = await world.client()
    _verifier, challenge = pkce()
    async with from_address("127.0.0.1") as browser, from_address("127.0.0.2") as elsewhere:
        page = await browser.get(authorize_url(world.srv.url, client, challenge))
        pair = form(page, "/auth/oauth/pair")
        url = f"{world.srv.url}/auth/oauth/pair"

        async def attempt() -> int:
            return (await browser.post(url, data={**pair["fields"], "code": "WRONGCODE2"})).status_code

        assert [await attempt() for _ in range(budget.burst)] == [400] * budget.burst  # the burst, exactly
        refused = await browser.post(url, data={**pair["fields"], "code": "WRONGCODE2"})
        assert refused.status_code == 429 and int(refused.headers["retry-after"]) >= 1
        assert "failed pairing attempts from this address" in refused.text
        # Another address (its own authorization in its own browser) is not held to this one's failures.
        theirs = form(await elsewhere.get(authorize_url(world.srv.url, client, challenge)), "/auth/oauth/pair")
        assert (await elsewhere.post(url, data={**theirs["fields"], "code": "WRONGCODE2"})).status_code == 400
        # Refilled at its rate a minute, on the server's clock: half a minute gives half of it back.
        clock.advance(30)
        allowed = int(budget.per_minute / 2)
        assert [await attempt() for _ in range(allowed)] == [400] * allowed
        assert await attempt() == 429
        clock.advance(60 / budget.per_minute - 0.5)  # short of one more
        assert await attempt() == 429


async def test_registrations_are_limited_per_address(world: World, clock: FakeClock) -> None:
    budget = BUDGETS["register"]
    url = f"{world.srv.url}/auth/oauth/register"
    meta = {"client_name": "c", "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none"}
    async with from_address("127.0.0.1") as http:
        codes = [(await http.post(url, json=meta)).status_code for _ in range(budget.burst + 1)]
        assert codes == [201] * budget.burst + [429]
        clock.advance(60 / budget.per_minute)
        assert [(await http.post(url, json=meta)).status_code for _ in range(2)] == [201, 429]


async def test_authorizations_started_and_never_finished_are_limited(world: World) -> None:
    world.srv.ctx.service(RateLimits).budgets["signin-start"] = Budget(burst=3, per_minute=0.001, what="unfinished")
    client = await world.client()
    async with from_address("127.0.0.1") as browser:
        # Completed authorizations give their start back: any number of them.
        for _ in range(5):
            _verifier, challenge = pkce()
            got = await sign_in_and_decide(
                browser, authorize_url(world.srv.url, client, challenge), await world.pairing_code()
            )
            assert "code" in got
        # Three started and never finished are allowed; the fourth is refused.
        _verifier, challenge = pkce()
        started = [(await browser.get(authorize_url(world.srv.url, client, challenge))).status_code for _ in range(4)]
        assert started == [200, 200, 200, 429]


async def test_failed_decisions_and_sso_returns_are_limited(world: World) -> None:
    world.srv.ctx.service(RateLimits).budgets["signin"] = Budget(burst=3, per_minute=0.001, what="failed sign-ins")
    async with from_address("127.0.0.1") as one, from_address("127.0.0.2") as two:
        decide = f"{world.srv.url}/auth/oauth/decide"
        codes = [(await one.post(decide, data={"request": "nope", "csrf": "x"})).status_code for _ in range(4)]
        assert all(c >= 400 and c != 429 for c in codes[:3]) and codes[3] == 429, codes
        back = f"{world.srv.url}{RETURN_PATH}?handoff=nope"
        codes = [(await two.get(back)).status_code for _ in range(4)]
        assert all(c >= 400 and c != 429 for c in codes[:3]) and codes[3] == 429, codes
