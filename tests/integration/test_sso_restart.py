"""Sign-ins survive a server restart: the pending SAML request, the accepted assertions and the pending OIDC
login live in the server database. Each test stops the real server and starts it again on the same data
directory between the login and the callback; replays after a restart and double posts are refused."""

from __future__ import annotations

import asyncio
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx

from hangar.core.clock import FakeClock
from hangar.identity import IdentityService
from tests.integration.test_sso_oidc_provider import ACCOUNTS, failure_code, me, token_of
from tests.peers.oidc_provider import drive_to_callback, oidc_provider
from tests.peers.sso_parts import SSO_PARTS
from tests.support.rpc import RpcClient
from tests.support.server import RunningServer, running_server
from tests.unit.sso.saml.kit import NOW, Spec, b64, idp_metadata_xml, signed_response
from tests.unit.sso.saml.serving import enable_saml

# The SAML kit's responses are addressed to this origin; each server run is told it is its public URL.
SAML_PUBLIC_URL = "http://127.0.0.1:8420"
# The OIDC callback the provider sends browsers to; the test delivers it to whichever run is up (a restarted
# server listens on a new loopback port, while a real one comes back behind the same public URL).
OIDC_PUBLIC_URL = "http://127.0.0.1:8421"
JSON = {"Accept": "application/json"}


KEPT = "restart-state-" + "r" * 30  # the client's state, kept with the pending sign-in across the restart


async def _start_saml_login(srv: RunningServer, client: httpx.AsyncClient) -> str:
    """Begin a SAML sign-in over HTTP; the AuthnRequest id (RelayState carries it)."""
    start = await client.get(f"{srv.url}/saml/login?relay=desktop&client_state={KEPT}")
    assert start.status_code == 302, start.text
    return parse_qs(urlsplit(start.headers["location"]).query)["RelayState"][0]


async def _post(client: httpx.AsyncClient, srv: RunningServer, saml_response: str) -> httpx.Response:
    return await client.post(f"{srv.url}/saml/acs", data={"SAMLResponse": saml_response}, headers=JSON)


def _response_to(rid: str, assertion_id: str = "_assert0001") -> str:
    spec = Spec(in_response_to=rid, scd_in_response_to=rid, assertion_id=assertion_id, response_id=f"_r{assertion_id}")
    return b64(signed_response(spec))


async def test_saml_sign_in_started_before_a_restart_completes_after_it_and_cannot_be_replayed(
    tmp_path: Path,
) -> None:
    async with httpx.AsyncClient() as client:
        async with running_server(tmp_path, clock=FakeClock(NOW), public_url=SAML_PUBLIC_URL) as srv:
            await enable_saml(srv.ctx, idp_metadata_xml())
            rid = await _start_saml_login(srv, client)
            users_before = len(await srv.ctx.service(IdentityService).list_users())
        genuine = _response_to(rid)

        async with running_server(tmp_path, clock=FakeClock(NOW), public_url=SAML_PUBLIC_URL) as srv:
            ok = await _post(client, srv, genuine)
            assert ok.status_code == 303, ok.text
            assert ok.headers["location"].startswith("hangar://auth/complete#token=")
            assert ok.headers["location"].endswith(f"&state={KEPT}")
            assert len(await srv.ctx.service(IdentityService).list_users()) == users_before + 1

        async with running_server(tmp_path, clock=FakeClock(NOW), public_url=SAML_PUBLIC_URL) as srv:
            # The same assertion again: the restart did not forget it was used.
            replay = await _post(client, srv, genuine)
            assert replay.status_code == 400 and replay.json()["error"]["code"] == "invalid", replay.text
            # A new assertion answering the used request: the request was used up for good.
            reuse = await _post(client, srv, _response_to(rid, "_assert0002"))
            assert reuse.status_code == 400 and reuse.json()["error"]["code"] == "request_match", reuse.text
            assert len(await srv.ctx.service(IdentityService).list_users()) == users_before + 1


async def test_saml_request_expired_across_a_restart_is_request_match(tmp_path: Path) -> None:
    clock = FakeClock(NOW)
    async with httpx.AsyncClient() as client:
        async with running_server(tmp_path, clock=clock, public_url=SAML_PUBLIC_URL) as srv:
            await enable_saml(srv.ctx, idp_metadata_xml())
            rid = await _start_saml_login(srv, client)
        clock.advance(11 * 60)  # pending requests live 10 minutes
        async with running_server(tmp_path, clock=clock, public_url=SAML_PUBLIC_URL) as srv:
            late = Spec(now=clock.now(), in_response_to=rid, scd_in_response_to=rid)
            answer = await _post(client, srv, b64(signed_response(late)))
            assert answer.status_code == 400 and answer.json()["error"]["code"] == "request_match", answer.text


async def test_saml_double_post_of_one_response_signs_in_once(tmp_path: Path) -> None:
    async with (
        running_server(tmp_path, clock=FakeClock(NOW), public_url=SAML_PUBLIC_URL) as srv,
        httpx.AsyncClient() as client,
    ):
        await enable_saml(srv.ctx, idp_metadata_xml())
        rid = await _start_saml_login(srv, client)
        users_before = len(await srv.ctx.service(IdentityService).list_users())
        genuine = _response_to(rid)
        answers = await asyncio.gather(*(_post(client, srv, genuine) for _ in range(4)))
        assert sorted(a.status_code for a in answers) == [303, 400, 400, 400], [a.text for a in answers]
        codes = {a.json()["error"]["code"] for a in answers if a.status_code == 400}
        assert codes <= {"invalid", "request_match"}, codes
        assert len(await srv.ctx.service(IdentityService).list_users()) == users_before + 1


async def test_oidc_sign_in_started_before_a_restart_completes_after_it_and_cannot_be_replayed(
    tmp_path: Path,
) -> None:
    callback = f"{OIDC_PUBLIC_URL}/oidc/callback"
    async with (
        oidc_provider(redirect_uris=[callback], accounts=ACCOUNTS) as peer,
        httpx.AsyncClient(follow_redirects=False, headers={"accept": "text/html"}) as browser,
    ):
        async with running_server(tmp_path, parts=SSO_PARTS, public_url=OIDC_PUBLIC_URL) as srv:
            async with RpcClient(srv.ws_url, srv.owner_token) as c:
                config = {"enabled": True, "issuer": peer.issuer, "clientId": peer.client_id}
                await c.call("sso.saveConfig", kind="oidc", config=config)
            start = await browser.get(f"{srv.url}/oidc/login?relay=desktop")
            assert start.status_code == 302, start.text
        # The provider's login and consent happen while our server is down.
        callback_url = await drive_to_callback(browser, start, callback, login="alice")
        path_and_query = callback_url[len(OIDC_PUBLIC_URL) :]

        async with running_server(tmp_path, parts=SSO_PARTS, public_url=OIDC_PUBLIC_URL) as srv:
            done = await browser.get(srv.url + path_and_query)
            alice = await me(srv, token_of(done))
            assert alice["email"] == "alice@example.com"

        async with running_server(tmp_path, parts=SSO_PARTS, public_url=OIDC_PUBLIC_URL) as srv:
            replay = await browser.get(srv.url + path_and_query)
            assert failure_code(replay) == "state"
            assert len(await srv.ctx.service(IdentityService).list_users()) == 2  # owner and alice, once


async def test_oidc_double_callback_signs_in_once(tmp_path: Path) -> None:
    async with (
        running_server(tmp_path, parts=SSO_PARTS) as srv,
        oidc_provider(redirect_uris=[f"{srv.url}/oidc/callback"], accounts=ACCOUNTS) as peer,
        httpx.AsyncClient(follow_redirects=False, headers={"accept": "text/html"}) as browser,
    ):
        async with RpcClient(srv.ws_url, srv.owner_token) as c:
            config = {"enabled": True, "issuer": peer.issuer, "clientId": peer.client_id}
            await c.call("sso.saveConfig", kind="oidc", config=config)
        start = await browser.get(f"{srv.url}/oidc/login?relay=desktop")
        callback_url = await drive_to_callback(browser, start, f"{srv.url}/oidc/callback", login="bob")
        answers = await asyncio.gather(browser.get(callback_url), browser.get(callback_url))
        assert sorted(a.status_code for a in answers) == [303, 400]
        assert [failure_code(a) for a in answers if a.status_code == 400] == ["state"]
        assert len(await srv.ctx.service(IdentityService).list_users()) == 2
