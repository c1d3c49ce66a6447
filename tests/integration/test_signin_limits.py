"""Attempt limits on the real server over HTTP: people signing in from one address (an office NAT, a proxy) are
never refused for succeeding; failed attempts are limited per client address on both sides of the line; the
address is the real one, taken from ``X-Forwarded-For`` only when a configured trusted proxy sends it (a header
any client sends chooses nothing); an IPv6 client counts under its /64; and sign-ins started and never finished
are bounded, each completed one giving its start back."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from hangar.core.clock import FakeClock
from hangar.httpkit.ratelimit import BUDGETS, Budget, RateLimits
from hangar.identity import IdentityService
from tests.support.server import RunningServer, running_server
from tests.unit.sso.saml.kit import NOW, b64, idp_metadata_xml, signed_response
from tests.unit.sso.saml.serving import enable_saml, sign_in_person

PUBLIC_URL = "http://127.0.0.1:8420"  # the origin the kit's identity provider addresses its responses to
PAIR_FAILURES = BUDGETS["pair"].burst


@pytest.fixture
async def srv(tmp_path: Path) -> AsyncIterator[RunningServer]:
    async with running_server(tmp_path / "data", clock=FakeClock(NOW), public_url=PUBLIC_URL) as s:
        await enable_saml(s.ctx, idp_metadata_xml())
        yield s


def client(source: str = "127.0.0.1") -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.AsyncHTTPTransport(local_address=source), timeout=30)


async def wrong_pairing(http: httpx.AsyncClient, base: str, forwarded_for: str | None = None) -> int:
    headers = {"x-forwarded-for": forwarded_for} if forwarded_for else {}
    reply = await http.post(f"{base}/auth/pair", json={"code": "WRONG-CODE"}, headers=headers)
    return reply.status_code


async def test_sixty_people_sign_in_from_one_address_and_none_is_refused(srv: RunningServer) -> None:
    async with client() as http:
        for n in range(60):
            login, done = await sign_in_person(http, srv.url, f"person{n}", now=NOW)
            assert login.status_code == 302, (n, login.status_code, login.text[:200])
            assert done is not None and done.status_code == 303, (n, done.status_code, done.text[:200])
    assert len(await srv.ctx.service(IdentityService).list_users()) >= 60


async def test_failed_sign_ins_are_limited_per_address_on_both_sides_of_the_line(srv: RunningServer) -> None:
    budget = BUDGETS["signin"].burst
    bogus = {"SAMLResponse": b64(signed_response())}  # answers no request of this server: refused (request_match)
    async with client() as http, client("127.0.0.3") as other:
        for _ in range(budget):
            refused = await http.post(f"{srv.url}/saml/acs", data=bogus, headers={"Accept": "application/json"})
            assert refused.status_code == 400 and refused.json()["error"]["code"] == "request_match"
        limited = await http.post(f"{srv.url}/saml/acs", data=bogus, headers={"Accept": "application/json"})
        assert limited.status_code == 429 and int(limited.headers["retry-after"]) >= 1
        assert "failed sign-ins from this address" in limited.json()["error"]["message"]
        # Another address is not held to this one's failures.
        _login, done = await sign_in_person(other, srv.url, "elsewhere", now=NOW)
        assert done is not None and done.status_code == 303


async def test_a_forwarded_header_from_a_client_that_is_no_trusted_proxy_chooses_nothing(srv: RunningServer) -> None:
    # Rotating X-Forwarded-For from a loopback client (uvicorn trusts loopback by default; this server names no
    # proxy): every guess still counts against the address the connection comes from.
    async with client() as http:
        for n in range(PAIR_FAILURES):
            assert await wrong_pairing(http, srv.url, f"198.51.100.{n}") in (400, 403, 404)
        assert await wrong_pairing(http, srv.url, "198.51.100.250") == 429


async def test_behind_a_trusted_proxy_each_client_counts_for_itself(tmp_path: Path) -> None:
    async with running_server(tmp_path / "data", trusted_proxies=("127.0.0.1",)) as srv, client() as proxy:
        for _ in range(PAIR_FAILURES):
            assert await wrong_pairing(proxy, srv.url, "203.0.113.7") != 429
        assert await wrong_pairing(proxy, srv.url, "203.0.113.7") == 429
        # Another client behind the same proxy is its own; what an outside client wrote to the left of the
        # address the proxy saw is not believed.
        assert await wrong_pairing(proxy, srv.url, "203.0.113.8") != 429
        assert await wrong_pairing(proxy, srv.url, "203.0.113.99, 203.0.113.7") == 429
        # An IPv6 client counts under its /64: another address in it is the same client, another /64 is not.
        for n in range(PAIR_FAILURES):
            assert await wrong_pairing(proxy, srv.url, f"2001:db8:1:2::{n + 1:x}") != 429
        assert await wrong_pairing(proxy, srv.url, "2001:db8:1:2:ffff:1:2:3") == 429
        assert await wrong_pairing(proxy, srv.url, "2001:db8:1:3::1") != 429
    # A client that is not the trusted proxy is who its connection says, whatever it forwards.
    async with running_server(tmp_path / "data2", trusted_proxies=("127.0.0.9",)) as srv, client() as direct:
        for n in range(PAIR_FAILURES):
            assert await wrong_pairing(direct, srv.url, f"203.0.113.{n}") != 429
        assert await wrong_pairing(direct, srv.url, "203.0.113.200") == 429


async def test_unfinished_sign_ins_are_bounded_and_a_completed_one_gives_its_start_back(srv: RunningServer) -> None:
    srv.ctx.service(RateLimits).budgets["signin-start"] = Budget(burst=3, per_minute=0.001, what="unfinished")
    async with client() as http:
        # A completed sign-in uses up nothing.
        for n in range(5):
            _login, done = await sign_in_person(http, srv.url, f"regular{n}", now=NOW)
            assert done is not None and done.status_code == 303
        # Three started and never finished are allowed; the fourth is refused.
        for _ in range(3):
            assert (await http.get(f"{srv.url}/saml/login?relay=desktop")).status_code == 302
        assert (await http.get(f"{srv.url}/saml/login?relay=desktop")).status_code == 429
        assert (await http.get(f"{srv.url}/oidc/login?relay=desktop")).status_code == 429


async def test_failed_oidc_callbacks_are_limited_per_address(srv: RunningServer) -> None:
    """A callback that answers no sign-in of this server (a guessed state) fails, and failures are limited like
    every other sign-in's: the budget exactly, then 429, for that address only."""
    budget = BUDGETS["signin"].burst
    callback = f"{srv.url}/oidc/callback?state=guessed&code=guessed"
    async with client() as http, client("127.0.0.3") as other:
        codes = [(await http.get(callback, headers={"Accept": "application/json"})).status_code for _ in range(budget)]
        assert all(c >= 400 and c != 429 for c in codes), codes
        limited = await http.get(callback, headers={"Accept": "application/json"})
        assert limited.status_code == 429 and "failed sign-ins from this address" in limited.text
        assert (await other.get(callback, headers={"Accept": "application/json"})).status_code not in (200, 429)
