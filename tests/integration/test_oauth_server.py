"""The OAuth authorization server over real HTTP against a running server: its metadata, registration and what
it refuses, the authorization endpoint's checks (a problem with the client or its redirect URI is shown, never
redirected), the forms' protection, and the token endpoint: PKCE, redirect URI, client authentication, code
reuse, refresh rotation and reuse detection, revocation, and the session policy. The pages are walked by an HTTP
client keeping cookies like a browser (Chromium walks them in ``test_oauth_mcp_browser``)."""

from __future__ import annotations

import base64
import html
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import httpx
import pytest

from hangar.core.clock import FakeClock
from hangar.core.principal import Role
from hangar.identity import IdentityService
from hangar.identity.part import IDENTITY_PART
from hangar.oauth.part import OAUTH_PART
from hangar.oversight import OVERSIGHT_PART
from hangar.sso.part import SSO_PART
from hangar.sso.saml.service import saml_service
from tests.peers.oidc_provider import drive_login, oidc_provider
from tests.support.oauth import authorize_url, form, pkce, register, sign_in_and_decide
from tests.support.rpc import RpcClient
from tests.support.server import RunningServer, running_server
from tests.unit.sso.saml.kit import NOW, b64, idp_metadata_xml, signed_response
from tests.unit.sso.saml.serving import enable_saml

PARTS = [OVERSIGHT_PART, IDENTITY_PART, SSO_PART, OAUTH_PART]
REDIRECT = "http://127.0.0.1:9/callback"  # never contacted: the tests read the redirect's Location
PUBLIC_URL = "http://127.0.0.1:8420"  # the origin the SAML kit's responses are addressed to


@dataclass
class World:
    srv: RunningServer
    http: httpx.AsyncClient
    alice: str  # Alice's own credential (member of ws)
    ws: str
    other_ws: str

    async def pairing_code(self) -> str:
        async with RpcClient(self.srv.ws_url, self.alice) as c:
            code: str = (await c.call("devices.pairingCode"))["code"]
        return code

    async def client(self, **metadata: Any) -> dict[str, Any]:
        return await register(self.http, self.srv.url, **{"redirect_uris": [REDIRECT], **metadata})

    async def code(
        self, client: dict[str, Any], *, workspace: str | None = None, access: str = "read"
    ) -> tuple[str, str]:
        """An approved authorization (in a fresh browser) and the verifier that redeems its code."""
        verifier, challenge = pkce()
        async with httpx.AsyncClient(timeout=30) as browser:
            got = await sign_in_and_decide(
                browser,
                authorize_url(self.srv.url, client, challenge, state="st"),
                await self.pairing_code(),
                workspace=workspace or self.ws,
                access=access,
            )
        assert got["state"] == "st" and got["iss"] == self.srv.url
        return got["code"], verifier

    async def token(self, client: dict[str, Any], **form: str) -> httpx.Response:
        data = {"client_id": client["client_id"], **form}
        return await self.http.post(f"{self.srv.url}/auth/oauth/token", data=data)

    async def grant(self, client: dict[str, Any], **choice: Any) -> dict[str, Any]:
        code, verifier = await self.code(client, **choice)
        reply = await self.token(
            client, grant_type="authorization_code", code=code, redirect_uri=REDIRECT, code_verifier=verifier
        )
        assert reply.status_code == 200, reply.text
        return dict(reply.json())

    async def works(self, access_token: str) -> bool:
        reply = await self.http.get(f"{self.srv.url}/auth/me", headers={"authorization": f"Bearer {access_token}"})
        return reply.status_code == 200


async def _world(srv: RunningServer, http: httpx.AsyncClient) -> World:
    ws, other = await srv.new_workspace("Alpha"), await srv.new_workspace("Beta")
    alice = await srv.new_user_token(ws, Role.member, name="alice")
    return World(srv, http, alice, ws, other)


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[World]:
    async with running_server(tmp_path / "data", parts=PARTS) as srv, httpx.AsyncClient(timeout=30) as http:
        yield await _world(srv, http)


def _error(reply: httpx.Response) -> tuple[str, str]:
    assert reply.headers["cache-control"] == "no-store"
    body = reply.json()
    return body["error"], body["error_description"]


def _query(location: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}


# -- metadata and registration ------------------------------------------------------------------------------------


async def test_the_metadata_names_this_server_and_what_it_supports(world: World) -> None:
    url = world.srv.url
    meta = (await world.http.get(f"{url}/.well-known/oauth-authorization-server")).json()
    resource = (await world.http.get(f"{url}/.well-known/oauth-protected-resource")).json()
    assert resource["authorization_servers"] == [meta["issuer"]] == [url] and resource["resource"] == f"{url}/mcp"
    assert meta["authorization_endpoint"] == f"{url}/auth/oauth/authorize"
    assert meta["token_endpoint"] == f"{url}/auth/oauth/token"
    assert meta["registration_endpoint"] == f"{url}/auth/oauth/register"
    assert meta["code_challenge_methods_supported"] == ["S256"]
    assert meta["grant_types_supported"] == ["authorization_code", "refresh_token"]
    assert meta["response_types_supported"] == ["code"]
    assert set(meta["token_endpoint_auth_methods_supported"]) == {"none", "client_secret_basic", "client_secret_post"}
    assert meta["authorization_response_iss_parameter_supported"] is True


@pytest.mark.parametrize(
    ("metadata", "error", "named"),
    [
        ({}, "invalid_redirect_uri", "redirect_uris"),
        ({"redirect_uris": []}, "invalid_redirect_uri", "redirect_uris"),
        ({"redirect_uris": "https://app.example/cb"}, "invalid_redirect_uri", "redirect_uris"),
        ({"redirect_uris": ["http://app.example/cb"]}, "invalid_redirect_uri", "redirect_uris[0]: plain http"),
        ({"redirect_uris": [REDIRECT, "https://app.example/cb#x"]}, "invalid_redirect_uri", "redirect_uris[1]"),
        ({"redirect_uris": ["javascript:alert(1)"]}, "invalid_redirect_uri", "javascript"),
        ({"redirect_uris": ["data:text/html,hi"]}, "invalid_redirect_uri", "data"),
        ({"redirect_uris": ["/callback"]}, "invalid_redirect_uri", "absolute"),
        ({"redirect_uris": ["https://u:p@app.example/cb"]}, "invalid_redirect_uri", "user information"),
        ({"redirect_uris": ["https:///cb"]}, "invalid_redirect_uri", "host"),
        ({"client_name": "x" * 101}, "invalid_client_metadata", "client_name"),
        ({"client_name": "line\nbreak"}, "invalid_client_metadata", "client_name"),
        ({"client_name": 5}, "invalid_client_metadata", "client_name"),
        ({"grant_types": ["client_credentials"]}, "invalid_client_metadata", "grant_types"),
        ({"grant_types": ["refresh_token"]}, "invalid_client_metadata", "grant_types"),
        ({"response_types": ["token"]}, "invalid_client_metadata", "response_types"),
        ({"token_endpoint_auth_method": "private_key_jwt"}, "invalid_client_metadata", "token_endpoint_auth_method"),
    ],
)
async def test_registration_refuses_bad_metadata_naming_the_field(
    world: World, metadata: dict[str, Any], error: str, named: str
) -> None:
    body = {"redirect_uris": [REDIRECT], **metadata} if "redirect_uris" not in metadata and metadata else metadata
    reply = await world.http.post(f"{world.srv.url}/auth/oauth/register", json=body)
    assert reply.status_code == 400
    got, description = _error(reply)
    assert got == error and named in description, description


async def test_registration_accepts_what_native_and_web_clients_use(world: World) -> None:
    uris = [
        "http://localhost:33418/callback",
        "http://[::1]:8080/cb",
        "cursor://anysphere.cursor-mcp/oauth/callback",
        "com.example.app:/oauth2redirect",
        "https://vscode.dev/redirect?x=1",
    ]
    public = await world.client(redirect_uris=uris, client_name="Claude Code")
    assert public["redirect_uris"] == uris and public["token_endpoint_auth_method"] == "none"
    assert "client_secret" not in public and public["grant_types"] == ["authorization_code", "refresh_token"]
    confidential = await register(world.http, world.srv.url, redirect_uris=[REDIRECT], token_endpoint_auth_method=None)
    assert confidential["token_endpoint_auth_method"] == "client_secret_basic" and confidential["client_secret"]
    junk = await world.http.post(f"{world.srv.url}/auth/oauth/register", content=b"nope")
    assert junk.status_code == 400 and _error(junk)[0] == "invalid_client_metadata"


# -- the authorization endpoint -------------------------------------------------------------------------------------


async def test_an_unknown_client_or_redirect_is_shown_never_redirected(world: World) -> None:
    client = await world.client()
    _verifier, challenge = pkce()
    unknown = await world.http.get(authorize_url(world.srv.url, {**client, "client_id": "hoc_nobody"}, challenge))
    assert unknown.status_code == 400 and "location" not in unknown.headers and "client_id" in unknown.text
    elsewhere = {**client, "redirect_uris": ["http://127.0.0.1:9/elsewhere"]}
    mismatch = await world.http.get(authorize_url(world.srv.url, elsewhere, challenge))
    assert mismatch.status_code == 400 and "location" not in mismatch.headers and "redirect_uri" in mismatch.text
    csp = mismatch.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in csp and "default-src 'none'" in csp and "unsafe-inline" not in csp


@pytest.mark.parametrize(
    ("overrides", "error", "says"),
    [
        ({"code_challenge": ""}, "invalid_request", "code_challenge is required"),
        ({"code_challenge_method": "plain"}, "invalid_request", "S256"),
        ({"code_challenge_method": ""}, "invalid_request", "S256"),
        ({"code_challenge": "short"}, "invalid_request", "43 characters"),
        ({"response_type": "token"}, "unsupported_response_type", "code"),
        ({"resource": "http://elsewhere.example/mcp"}, "invalid_target", "/mcp"),
    ],
)
async def test_a_bad_request_is_shown_never_redirected_even_for_an_approved_client(
    world: World, overrides: dict[str, str], error: str, says: str
) -> None:
    client = await world.client()
    _verifier, challenge = pkce()
    shown = await world.http.get(authorize_url(world.srv.url, client, challenge, state="keep-me", **overrides))
    assert shown.status_code == 400 and "location" not in shown.headers
    assert error in shown.text and says in html.unescape(shown.text)
    # Once a person approved the client, anyone's browser sent to a bad request is still not redirected: the
    # redirect URI is whatever site registered the client (an open redirect otherwise).
    await world.grant(client)
    async with httpx.AsyncClient(timeout=30) as stranger:
        reply = await stranger.get(authorize_url(world.srv.url, client, challenge, state="keep-me", **overrides))
    assert reply.status_code == 400 and "location" not in reply.headers
    assert error in reply.text and says in html.unescape(reply.text)
    # Within a request this browser started and signed in to, the person's answer goes back to the client.
    async with httpx.AsyncClient(timeout=30) as browser:
        denied = await sign_in_and_decide(
            browser, authorize_url(world.srv.url, client, challenge, state="mine"), await world.pairing_code(),
            decision="deny",
        )  # fmt: skip
    assert denied["error"] == "access_denied" and denied["state"] == "mine" and denied["iss"] == world.srv.url


async def test_the_page_escapes_what_the_client_says_and_loads_nothing_else(world: World) -> None:
    client = await world.client(client_name="<script>alert(1)</script>", redirect_uris=[REDIRECT + "?a=<b>"])
    _verifier, challenge = pkce()
    page = await world.http.get(authorize_url(world.srv.url, client, challenge))
    assert page.status_code == 200
    assert "<script>" not in page.text and "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text
    assert "?a=&lt;b&gt;" in page.text
    csp = page.headers["content-security-policy"]
    assert "script-src" not in csp and "style-src 'self'" in csp and "frame-ancestors 'none'" in csp
    assert page.headers["x-frame-options"] == "DENY" and page.headers["cache-control"] == "no-store"
    cookie = page.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=lax" in cookie and "path=/auth/oauth" in cookie


async def test_forms_need_their_anti_forgery_token_and_the_browser_that_started(world: World) -> None:
    client = await world.client()
    _verifier, challenge = pkce()
    code = await world.pairing_code()
    async with httpx.AsyncClient(timeout=30) as browser, httpx.AsyncClient(timeout=30) as stranger:
        page = await browser.get(authorize_url(world.srv.url, client, challenge))
        pair = form(page, "/auth/oauth/pair")
        url = f"{world.srv.url}/auth/oauth/pair"
        missing = await browser.post(url, data={"request": pair["fields"]["request"], "code": code})
        assert missing.status_code == 403 and "anti-forgery" in missing.text
        wrong = await browser.post(url, data={**pair["fields"], "csrf": "x" * 43, "code": code})
        assert wrong.status_code == 403
        # Another browser with the same form (token and all) but without the cookie.
        foreign = await stranger.post(url, data={**pair["fields"], "code": code})
        assert foreign.status_code == 403 and "another browser" in foreign.text
        # Nothing was spent or signed in: the code still works, here.
        signed = await browser.post(url, data={**pair["fields"], "code": code})
        assert signed.status_code == 303 and signed.headers["location"].startswith("/auth/oauth/consent?")
        consent = await browser.get(f"{world.srv.url}{signed.headers['location']}")
        decide = form(consent, "/auth/oauth/decide")
        no_token = {k: v for k, v in decide["fields"].items() if k != "csrf"}
        refused = await browser.post(f"{world.srv.url}/auth/oauth/decide", data={**no_token, "decision": "approve"})
        assert refused.status_code == 403
        stolen = await stranger.post(f"{world.srv.url}/auth/oauth/decide", data={**decide["fields"], "workspace": "*"})
        assert stolen.status_code == 403


async def test_a_wrong_pairing_code_or_an_invite_shows_the_page_again(world: World) -> None:
    client = await world.client()
    _verifier, challenge = pkce()
    async with RpcClient(world.srv.ws_url, world.srv.owner_token) as owner:
        invite = (await owner.call("members.invite", workspace_id=world.ws, role="member"))["code"]
    async with httpx.AsyncClient(timeout=30) as browser:
        page = await browser.get(authorize_url(world.srv.url, client, challenge))
        pair = form(page, "/auth/oauth/pair")
        for code in ("WRONGCODE2", invite):
            again = await browser.post(f"{world.srv.url}/auth/oauth/pair", data={**pair["fields"], "code": code})
            assert again.status_code == 400 and "unknown, used or expired" in again.text
    # The invite was not spent by the attempt.
    async with httpx.AsyncClient(timeout=30) as http:
        joined = await http.post(f"{world.srv.url}/auth/pair", json={"code": invite, "deviceName": "bob"})
    assert joined.status_code == 200


async def test_denying_sends_access_denied_back(world: World) -> None:
    client = await world.client()
    _verifier, challenge = pkce()
    async with httpx.AsyncClient(timeout=30) as browser:
        got = await sign_in_and_decide(
            browser,
            authorize_url(world.srv.url, client, challenge, state="s"),
            await world.pairing_code(),
            decision="deny",
        )
    assert got == {
        "error": "access_denied",
        "error_description": "the person denied access",
        "state": "s",
        "iss": world.srv.url,
    }


async def test_consent_offers_only_the_persons_workspaces(world: World) -> None:
    client = await world.client()
    _verifier, challenge = pkce()
    async with httpx.AsyncClient(timeout=30) as browser:
        page = await browser.get(authorize_url(world.srv.url, client, challenge))
        pair = form(page, "/auth/oauth/pair")
        signed = await browser.post(
            f"{world.srv.url}/auth/oauth/pair", data={**pair["fields"], "code": await world.pairing_code()}
        )
        consent = await browser.get(f"{world.srv.url}{signed.headers['location']}")
        assert "Alpha" in consent.text and "Beta" not in consent.text
        fields = {**form(consent, "/auth/oauth/decide")["fields"], "decision": "approve", "access": "read"}
        foreign = await browser.post(f"{world.srv.url}/auth/oauth/decide", data={**fields, "workspace": world.other_ws})
        assert foreign.status_code == 400 and "choose one of your workspaces" in foreign.text


# -- the token endpoint ---------------------------------------------------------------------------------------------


async def test_a_code_needs_the_verifier_its_client_and_its_redirect(world: World) -> None:
    client = await world.client()
    other = await world.client()
    code, verifier = await world.code(client)
    redeem = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT}
    assert _error(await world.token(client, **redeem)) == ("invalid_request", "code_verifier is required (PKCE)")
    code, verifier = await world.code(client)
    redeem["code"] = code
    wrong = await world.token(client, **redeem, code_verifier=pkce()[0])
    assert wrong.status_code == 400 and _error(wrong) == (
        "invalid_grant",
        "code_verifier does not match the code_challenge",
    )
    code, verifier = await world.code(client)
    redeem["code"] = code
    elsewhere = await world.token(
        client, **{**redeem, "redirect_uri": "http://127.0.0.1:9/other"}, code_verifier=verifier
    )
    assert _error(elsewhere)[0] == "invalid_grant" and "redirect_uri" in _error(elsewhere)[1]
    code, verifier = await world.code(client)
    redeem["code"] = code
    stolen = await world.token(other, **redeem, code_verifier=verifier)
    assert _error(stolen) == ("invalid_grant", "the authorization code was issued to another client")
    guessed = await world.token(client, **redeem, code_verifier=pkce()[0])
    assert _error(guessed)[0] == "invalid_grant"
    # Neither the other client nor a wrong verifier burnt the code: its own client still redeems it.
    assert (await world.token(client, **redeem, code_verifier=verifier)).status_code == 200
    unknown = await world.token({"client_id": "hoc_nobody"}, **redeem, code_verifier=verifier)
    assert unknown.status_code == 401 and _error(unknown)[0] == "invalid_client"
    made_up = await world.token(client, **{**redeem, "code": "made-up"}, code_verifier=verifier)
    assert _error(made_up) == ("invalid_grant", "the authorization code is unknown")
    assert _error(await world.token(client, grant_type="password"))[0] == "unsupported_grant_type"
    assert _error(await world.token(client, grant_type="authorization_code"))[0] == "invalid_request"


async def test_the_access_token_is_a_device_credential_named_after_the_client(world: World) -> None:
    client = await world.client(client_name="Inspector")
    tokens = await world.grant(client)
    assert tokens["token_type"] == "Bearer" and tokens["expires_in"] == 3600 and tokens["refresh_token"]
    async with RpcClient(world.srv.ws_url, tokens["access_token"]) as c:
        assert [w["id"] for w in await c.call("workspaces.list")] == [world.ws]
    async with RpcClient(world.srv.ws_url, world.alice) as c:
        device = next(d for d in await c.call("devices.list") if d["name"] == "Inspector (OAuth)")
        assert device["workspaceId"] == world.ws and device["readOnly"] is True
        await c.call("devices.revoke", device_id=device["id"])
    # Revoked by the person: the token stops, and the grant cannot be refreshed back to life.
    assert not await world.works(tokens["access_token"])
    refreshed = await world.token(client, grant_type="refresh_token", refresh_token=tokens["refresh_token"])
    assert _error(refreshed)[0] == "invalid_grant"


async def test_a_code_used_twice_revokes_what_it_gave(world: World) -> None:
    client = await world.client()
    code, verifier = await world.code(client)
    redeem = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT, "code_verifier": verifier}
    first = await world.token(client, **redeem)
    assert first.status_code == 200 and await world.works(first.json()["access_token"])
    again = await world.token(client, **redeem)
    assert _error(again) == ("invalid_grant", "the authorization code was already used; what it gave is revoked")
    assert not await world.works(first.json()["access_token"])
    refreshed = await world.token(client, grant_type="refresh_token", refresh_token=first.json()["refresh_token"])
    assert _error(refreshed)[0] == "invalid_grant"
    async with RpcClient(world.srv.ws_url, world.srv.owner_token) as owner:
        actions = [r["action"] for r in await owner.call("audit.list", workspace_id=world.ws)]
    assert "oauth.codeReused" in actions


async def test_refresh_tokens_rotate_and_a_used_one_revokes_the_grant(world: World) -> None:
    client = await world.client()
    first = await world.grant(client)
    second_reply = await world.token(client, grant_type="refresh_token", refresh_token=first["refresh_token"])
    assert second_reply.status_code == 200, second_reply.text
    second = second_reply.json()
    assert second["refresh_token"] != first["refresh_token"] and second["access_token"] != first["access_token"]
    assert not await world.works(first["access_token"]) and await world.works(second["access_token"])
    third = (await world.token(client, grant_type="refresh_token", refresh_token=second["refresh_token"])).json()
    assert await world.works(third["access_token"])
    async with RpcClient(world.srv.ws_url, world.alice) as c:
        assert sum(d["name"] == "Test client (OAuth)" for d in await c.call("devices.list")) == 1  # one credential
    # The first refresh token again: someone else holds a copy. Everything the grant gave ends.
    replay = await world.token(client, grant_type="refresh_token", refresh_token=first["refresh_token"])
    assert _error(replay)[0] == "invalid_grant" and "already used" in _error(replay)[1]
    assert not await world.works(third["access_token"])
    latest = await world.token(client, grant_type="refresh_token", refresh_token=third["refresh_token"])
    assert _error(latest)[0] == "invalid_grant"
    async with RpcClient(world.srv.ws_url, world.srv.owner_token) as owner:
        rows = await owner.call("audit.list", workspace_id=world.ws)
    reused = next(r for r in rows if r["action"] == "oauth.refreshReused")
    assert reused["principal"].startswith("user:") and reused["target"] == f"oauth-client:{client['client_id']}"
    assert first["refresh_token"] not in str(rows) and third["access_token"] not in str(rows)


async def test_revocation_ends_the_grant(world: World) -> None:
    client = await world.client()
    tokens = await world.grant(client)
    url = f"{world.srv.url}/auth/oauth/revoke"
    unknown = await world.http.post(url, data={"client_id": client["client_id"], "token": "nothing"})
    assert unknown.status_code == 200 and await world.works(tokens["access_token"])
    other = await world.client()
    foreign = await world.http.post(url, data={"client_id": other["client_id"], "token": tokens["refresh_token"]})
    assert foreign.status_code == 200 and await world.works(tokens["access_token"])
    done = await world.http.post(url, data={"client_id": client["client_id"], "token": tokens["access_token"]})
    assert done.status_code == 200 and not await world.works(tokens["access_token"])
    refreshed = await world.token(client, grant_type="refresh_token", refresh_token=tokens["refresh_token"])
    assert _error(refreshed)[0] == "invalid_grant"


async def test_a_confidential_client_proves_its_secret(world: World) -> None:
    client = await world.client(token_endpoint_auth_method="client_secret_basic")
    code, verifier = await world.code(client)
    redeem = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT, "code_verifier": verifier}
    bare = await world.token(client, **redeem)
    assert bare.status_code == 401 and _error(bare)[0] == "invalid_client"
    wrong = base64.b64encode(f"{quote(client['client_id'])}:nope".encode()).decode()
    url = f"{world.srv.url}/auth/oauth/token"
    refused = await world.http.post(url, data=redeem, headers={"authorization": f"Basic {wrong}"})
    assert refused.status_code == 401 and refused.headers["www-authenticate"].startswith("Basic")
    basic = base64.b64encode(f"{quote(client['client_id'])}:{quote(client['client_secret'])}".encode()).decode()
    ok = await world.http.post(url, data=redeem, headers={"authorization": f"Basic {basic}"})
    assert ok.status_code == 200, ok.text


async def test_the_session_policy_holds_a_grant(tmp_path: Path) -> None:
    clock = FakeClock()
    async with running_server(tmp_path / "data", parts=PARTS, clock=clock) as srv, httpx.AsyncClient() as http:
        world = await _world(srv, http)
        await srv.ctx.service(IdentityService).set_session_policy(max_age_minutes=90, idle_timeout_minutes=0)
        client = await world.client()
        tokens = await world.grant(client)
        clock.advance(61 * 60)  # past the access token's hour: it stops, the refresh renews it
        assert not await world.works(tokens["access_token"])
        renewed = (await world.token(client, grant_type="refresh_token", refresh_token=tokens["refresh_token"])).json()
        assert await world.works(renewed["access_token"])
        clock.advance(30 * 60)  # past the policy's maximum age of the credential
        ended = await world.token(client, grant_type="refresh_token", refresh_token=renewed["refresh_token"])
        assert _error(ended)[0] == "invalid_grant" and "maximum age" in _error(ended)[1]


async def test_an_sso_hand_off_that_reaches_another_browser_is_refused(world: World) -> None:
    srv = world.srv
    accounts = {"mallory": {"email": "mallory@example.com", "email_verified": True, "name": "Mallory"}}
    async with oidc_provider(redirect_uris=[f"{srv.url}/oidc/callback"], accounts=accounts) as peer:
        async with RpcClient(srv.ws_url, srv.owner_token) as c:
            await c.call(
                "sso.saveConfig",
                kind="oidc",
                config={"enabled": True, "issuer": peer.issuer, "clientId": peer.client_id},
            )
        client = await world.client()
        _verifier, challenge = pkce()
        async with httpx.AsyncClient(timeout=30) as victim, httpx.AsyncClient(timeout=30) as attacker:
            lost = await attacker.get(f"{srv.url}/oidc/login?relay=oauth", headers={"accept": "application/json"})
            assert lost.status_code == 400 and "continuation" in lost.json()["error"]["message"]
            page = await victim.get(authorize_url(srv.url, client, challenge))
            request_id = form(page, "/auth/oauth/pair")["fields"]["request"]
            # Someone else signs in at the provider for the victim's request: the hand-off lands in their browser.
            done = await drive_login(
                attacker, f"{srv.url}/oidc/login?relay=oauth&continuation={request_id}", login="mallory"
            )
            assert done.status_code == 303 and done.headers["location"].startswith("/auth/oauth/sso-return?handoff=")
            assert "#token=" not in done.headers["location"]
            landed = await attacker.get(f"{srv.url}{done.headers['location']}")
            assert landed.status_code == 403 and "another browser" in landed.text
            # The victim's request is still unsigned: its consent page asks for a sign-in.
            consent = await victim.get(f"{srv.url}/auth/oauth/consent?request={request_id}")
            assert consent.status_code == 200 and "/auth/oauth/pair" in consent.text and "Mallory" not in consent.text


@pytest.mark.sqlite_only("counts devices with SQLite's ? placeholder")
async def test_a_saml_sign_in_continues_the_authorization_request(tmp_path: Path) -> None:
    async with (
        running_server(tmp_path / "data", parts=PARTS, clock=FakeClock(NOW), public_url=PUBLIC_URL) as srv,
        httpx.AsyncClient(timeout=30) as browser,
        httpx.AsyncClient(timeout=30) as idp_post,
    ):
        await enable_saml(srv.ctx, idp_metadata_xml())
        client = await register(browser, srv.url, redirect_uris=[REDIRECT])
        _verifier, challenge = pkce()
        # The issuer and resource are the public URL; the test reaches the listener itself.
        page = await browser.get(authorize_url(srv.url, client, challenge, resource=f"{PUBLIC_URL}/mcp"))
        assert 'href="/auth/oauth/sso?' in page.text.replace("'", '"')
        request_id = form(page, "/auth/oauth/pair")["fields"]["request"]
        start = await browser.get(f"{srv.url}/auth/oauth/sso", params={"request": request_id, "provider": "saml"})
        assert start.status_code == 303 and start.headers["location"] == (
            f"/saml/login?relay=oauth&continuation={request_id}"
        )
        # The kit's response answers request _req0001: pretend /saml/login issued it for this continuation.
        saml_service(srv.ctx).pending.add("_req0001", relay="oauth", continuation=request_id)
        # The identity provider's form post carries no cookie of ours (a cross-site post).
        acs = await idp_post.post(f"{srv.url}/saml/acs", data={"SAMLResponse": b64(signed_response())})
        assert acs.status_code == 303 and acs.headers["location"].startswith("/auth/oauth/sso-return?handoff=")
        back = await browser.get(f"{srv.url}{acs.headers['location']}")
        assert back.status_code == 303, back.text
        consent = await browser.get(f"{srv.url}{back.headers['location']}")
        assert consent.status_code == 200 and "/auth/oauth/decide" in consent.text
        users = await srv.ctx.service(IdentityService).list_users()
        saml_user = next(u for u in users if u.sso_subject)
        assert saml_user.display_name in consent.text
        # Nothing else was issued: no device credential for the SAML sign-in itself.
        async with srv.ctx.dbs.server.connect() as conn:
            devices = (
                await conn.exec_driver_sql("SELECT count(*) FROM devices WHERE user_id = ?", (saml_user.id,))
            ).scalar()
        assert devices == 0
