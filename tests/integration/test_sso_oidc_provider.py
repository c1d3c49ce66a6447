"""OIDC sign-in against the certified ``oidc-provider`` (Node), driven through its login and consent pages.

Each test runs the real server and the real provider on loopback; the credential the hand-off carries is then
used on the server's RPC socket.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import httpx
import pytest
import websockets

from hangar.core.clock import FakeClock
from hangar.identity import IdentityService
from hangar.sso.config import SsoConfigStore
from hangar.sso.oidc.flow import OidcService
from tests.peers.oidc_provider import OidcPeer, drive_login, drive_to_callback, oidc_provider, signing_key
from tests.peers.sso_parts import SSO_PARTS
from tests.support.records import stored_text
from tests.support.rpc import RpcClient, RpcError
from tests.support.server import RunningServer, running_server

ACCOUNTS: dict[str, dict[str, Any]] = {
    "alice": {"email": "alice@example.com", "email_verified": True, "name": "Alice Liddell", "groups": ["admins"]},
    "bob": {"email": "bob@example.com", "email_verified": True, "name": "Bob Builder", "groups": ["eng"]},
    "eve": {"email": "eve@example.com", "email_verified": False, "name": "Eve", "groups": []},
    "carol": {"email": "carol@example.com", "email_verified": True, "name": "Carol", "groups": ["admins"]},
}


@dataclasses.dataclass
class Setup:
    srv: RunningServer
    peer: OidcPeer
    http: httpx.AsyncClient

    async def save(self, **config: Any) -> dict[str, Any]:
        base = {"enabled": True, "issuer": self.peer.issuer, "clientId": self.peer.client_id}
        async with RpcClient(self.srv.ws_url, self.srv.owner_token) as c:
            result: dict[str, Any] = await c.call("sso.saveConfig", kind="oidc", config={**base, **config})
            return result

    async def login(self, who: str, query: str = "relay=desktop") -> httpx.Response:
        """A sign-in in a fresh browser (its own cookie jar, so no provider session carries over)."""
        async with httpx.AsyncClient(follow_redirects=False, headers={"accept": "text/html"}) as browser:
            return await drive_login(browser, f"{self.srv.url}/oidc/login?{query}", login=who)


@contextlib.asynccontextmanager
async def setup(
    tmp_path: Path, *, client_secret: str | None = None, clock: FakeClock | None = None, **settings: Any
) -> AsyncIterator[Setup]:
    async with (
        running_server(tmp_path, parts=SSO_PARTS, clock=clock, **settings) as srv,
        oidc_provider(
            redirect_uris=[f"{srv.url}/oidc/callback"], accounts=ACCOUNTS, client_secret=client_secret
        ) as peer,
        httpx.AsyncClient(follow_redirects=False, headers={"accept": "text/html"}) as http,
    ):
        yield Setup(srv, peer, http)


def token_of(resp: httpx.Response, prefix: str = "hangar://auth/complete#token=") -> str:
    assert resp.status_code == 303, resp.text
    location = resp.headers["location"]
    assert location.startswith(prefix), location
    return unquote(location[len(prefix) :])


def failure_code(resp: httpx.Response) -> str:
    assert resp.status_code == 400, (resp.status_code, resp.headers.get("location"))
    body = resp.text
    start = body.index("<code id='code'>") + len("<code id='code'>")
    return body[start : body.index("</code>", start)]


async def me(srv: RunningServer, token: str) -> dict[str, Any]:
    async with RpcClient(srv.ws_url, token) as c:
        result: dict[str, Any] = await c.call("users.me")
        return result


async def test_code_flow_end_to_end_with_groups_jit_and_auto_member(tmp_path: Path) -> None:
    async with setup(tmp_path) as s:
        ws = await s.srv.new_workspace("Hangar HQ")
        await s.save(groupRoleMap={"admins": "admin"}, defaultRole="guest")
        start = await s.http.get(f"{s.srv.url}/oidc/login?relay=desktop")
        assert start.status_code == 302
        auth = urlsplit(start.headers["location"])
        params = parse_qs(auth.query)
        assert f"{auth.scheme}://{auth.netloc}" == s.peer.issuer
        assert params["code_challenge_method"] == ["S256"] and len(params["code_challenge"][0]) == 43
        assert params["response_type"] == ["code"] and params["nonce"][0] and params["state"][0]
        assert "code_verifier" not in params
        cookie = start.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=lax" in cookie and "path=/oidc/callback" in cookie

        token = token_of(await s.login("alice"))
        alice = await me(s.srv, token)
        assert alice["email"] == "alice@example.com" and alice["displayName"] == "Alice Liddell"
        assert alice["isServerOwner"] is False
        assert alice["workspaces"] == [{"id": ws, "name": "Hangar HQ", "role": "admin"}]
        user = await s.srv.ctx.service(IdentityService).get_user(alice["id"])
        assert user is not None and user.sso_issuer == s.peer.issuer and user.sso_subject == "alice"

        # A user whose groups map to nothing gets the default role; signing in again keeps the same user.
        bob = await me(s.srv, token_of(await s.login("bob")))
        assert bob["workspaces"][0]["role"] == "guest"
        again = await me(s.srv, token_of(await s.login("bob")))
        assert again["id"] == bob["id"]
        assert len(await s.srv.ctx.service(IdentityService).list_users()) == 3  # owner, alice, bob

        # groupsClaim names the claim read: with another name, carol's "admins" is not seen.
        await s.save(groupsClaim="roles")
        carol = await me(s.srv, token_of(await s.login("carol")))
        assert carol["workspaces"][0]["role"] == "guest"


async def test_confidential_client_secret_from_the_secrets_file(tmp_path: Path) -> None:
    async with setup(tmp_path, client_secret="the-client-secret-0123456789") as s:
        await s.save(clientSecret="a-wrong-secret")
        assert failure_code(await s.login("alice")) == "invalid"
        saved = await s.save(clientSecret="the-client-secret-0123456789")
        assert saved["clientSecretPresent"] is True and "clientSecret" not in saved
        token = token_of(await s.login("alice"))
        assert (await me(s.srv, token))["email"] == "alice@example.com"
        assert b"the-client-secret" not in stored_text(tmp_path)


async def test_hand_off_targets(tmp_path: Path) -> None:
    async with setup(tmp_path, trusted_origins=("http://localhost:5173",)) as s:
        await s.save()
        same_origin = await s.login("alice", query="")
        assert same_origin.headers["location"].startswith("/auth/complete#token=")
        popup = await s.login("alice", query="relay=web-popup&client_origin=http://localhost:5173")
        token = token_of(popup, "/auth/popup-complete?client_origin=http%3A%2F%2Flocalhost%3A5173#token=")
        assert (await me(s.srv, token))["email"] == "alice@example.com"
        page = await s.http.get(f"{s.srv.url}/auth/popup-complete?client_origin=http://localhost:5173")
        assert '"http://localhost:5173"' in page.text
        foreign = await s.login("alice", query="relay=web-popup&client_origin=https://attacker.example")
        assert foreign.headers["location"].startswith("/auth/popup-complete#token=")
        # Loopback on a port the configuration does not name (a rig's forwarded port) is as foreign.
        loopback = await s.login("alice", query="relay=web-popup&client_origin=http://localhost:8080")
        assert loopback.headers["location"].startswith("/auth/popup-complete#token=")


async def test_the_hand_off_echoes_the_state_the_client_kept_and_refuses_a_malformed_one(tmp_path: Path) -> None:
    """The client's state goes round the provider with the pending sign-in and comes back in the fragment, so the
    client can tell a sign-in it started from a link someone else made."""
    async with setup(tmp_path) as s:
        await s.save()
        kept = "K-_" * 14 + "k"  # 43 characters, the web client's shape
        popup = await s.login("alice", query=f"relay=web-popup&client_state={kept}")
        location = popup.headers["location"]
        assert location.startswith("/auth/popup-complete#token=") and location.endswith(f"&state={kept}")
        token = unquote(location.split("#token=", 1)[1].split("&", 1)[0])
        assert (await me(s.srv, token))["email"] == "alice@example.com"
        # Not sent to the provider: only our own state and the PKCE challenge travel there.
        start = await s.http.get(f"{s.srv.url}/oidc/login?relay=web-popup&client_state={kept}")
        assert start.status_code == 302 and kept not in start.headers["location"]
        plain = await s.login("alice", query="")
        assert "&state=" not in plain.headers["location"]
        for bad in ("short", "a" * 129, "a" * 30 + "%26token%3Dmine"):
            refused = await s.http.get(
                f"{s.srv.url}/oidc/login?relay=web-popup&client_state={bad}", headers={"accept": "application/json"}
            )
            assert refused.status_code == 400 and "client_state" in refused.json()["error"]["message"]


async def test_web_client_url_receives_the_credential(tmp_path: Path) -> None:
    async with setup(tmp_path, web_client_url="https://app.example.com/") as s:
        await s.save()
        token = token_of(await s.login("alice"), "https://app.example.com#token=")
        assert (await me(s.srv, token))["email"] == "alice@example.com"


async def test_state_is_single_use_and_bound_to_the_browser(tmp_path: Path) -> None:
    async with setup(tmp_path) as s:
        await s.save()
        start = await s.http.get(f"{s.srv.url}/oidc/login?relay=desktop")
        callback_url = await drive_to_callback(s.http, start, f"{s.srv.url}/oidc/callback", login="alice")
        # Another browser (no binding cookie) cannot use the code, and using it burns the state.
        async with httpx.AsyncClient(headers={"accept": "application/json"}) as stranger:
            stolen = await stranger.get(callback_url)
        assert stolen.status_code == 400 and stolen.json()["error"]["code"] == "state"
        replay = await s.http.get(callback_url)
        assert failure_code(replay) == "state"
        # The provider names itself in its response (RFC 9207); another name is a mix-up.
        start = await s.http.get(f"{s.srv.url}/oidc/login?relay=desktop")
        callback_url = await drive_to_callback(s.http, start, f"{s.srv.url}/oidc/callback", login="alice")
        assert parse_qs(urlsplit(callback_url).query)["iss"] == [s.peer.issuer]
        mixed_up = callback_url.replace("iss=http%3A%2F%2F127.0.0.1", "iss=http%3A%2F%2Fevil.example")
        assert mixed_up != callback_url
        assert failure_code(await s.http.get(mixed_up)) == "issuer"
        # The provider says it always names itself, so a response that does not is not its own (RFC 9207).
        discovery = await s.http.get(f"{s.peer.issuer}/.well-known/openid-configuration")
        assert discovery.json()["authorization_response_iss_parameter_supported"] is True
        start = await s.http.get(f"{s.srv.url}/oidc/login?relay=desktop")
        callback_url = await drive_to_callback(s.http, start, f"{s.srv.url}/oidc/callback", login="alice")
        parts = urlsplit(callback_url)
        unnamed = parts._replace(query="&".join(p for p in parts.query.split("&") if not p.startswith("iss="))).geturl()
        assert "iss=" not in unnamed and "code=" in unnamed
        assert failure_code(await s.http.get(unnamed)) == "issuer"
        forged = await s.http.get(f"{s.srv.url}/oidc/callback?state=forged&code=x")
        assert failure_code(forged) == "state"
        users = await s.srv.ctx.service(IdentityService).list_users()
        assert [u.email for u in users] == [None]  # nothing was provisioned


async def test_jit_off_deactivated_and_unverified_email(tmp_path: Path) -> None:
    async with setup(tmp_path) as s:
        await s.save(allowJit=False)
        refused = await s.login("alice")
        assert failure_code(refused) == "invalid" and "just-in-time" in refused.text
        assert len(await s.srv.ctx.service(IdentityService).list_users()) == 1
        # A user invited before SSO is linked by their verified email on first sign-in.
        invited = await s.srv.ctx.service(IdentityService).create_user(email="alice@example.com", display_name="alice")
        token = token_of(await s.login("alice"))
        assert (await me(s.srv, token))["id"] == invited.id
        # An unverified email never links to an existing account.
        await s.srv.ctx.service(IdentityService).create_user(email="eve@example.com", display_name="eve")
        assert "not verified" in (await s.login("eve")).text
        await s.srv.ctx.service(IdentityService).deactivate_user(invited.id)
        deactivated = await s.login("alice")
        assert failure_code(deactivated) == "invalid" and "deactivated" in deactivated.text


async def test_issuer_mismatch_and_disabled_connection(tmp_path: Path) -> None:
    async with setup(tmp_path) as s:
        # The provider calls itself 127.0.0.1; a connection saved as localhost must not accept it.
        await s.save(issuer=s.peer.issuer.replace("127.0.0.1", "localhost"))
        resp = await s.http.get(f"{s.srv.url}/oidc/login", headers={"accept": "application/json"})
        assert resp.status_code == 400 and resp.json()["error"]["code"] == "issuer"
        await s.save(enabled=False, issuer=s.peer.issuer)
        off = await s.http.get(f"{s.srv.url}/oidc/login")
        assert failure_code(off) == "invalid"


async def test_expired_id_token(tmp_path: Path) -> None:
    clock = FakeClock(datetime.now(UTC) + timedelta(hours=3))
    async with setup(tmp_path, clock=clock) as s:
        await s.save()
        assert failure_code(await s.login("alice")) == "expired"
        assert len(await s.srv.ctx.service(IdentityService).list_users()) == 1


async def test_nonce_mismatch(tmp_path: Path) -> None:
    async with setup(tmp_path) as s:
        await s.save()
        service = s.srv.ctx.service(OidcService)
        start = await s.http.get(f"{s.srv.url}/oidc/login?relay=desktop")
        state = parse_qs(urlsplit(start.headers["location"]).query)["state"][0]
        # As if the provider answered with a token minted for another sign-in.
        pending = service.pending.take(state)
        assert pending is not None
        service.pending.add(state, dataclasses.replace(pending, nonce="another-nonce"))
        callback_url = await drive_to_callback(s.http, start, f"{s.srv.url}/oidc/callback", login="alice")
        resp = await s.http.get(callback_url)
        assert failure_code(resp) == "nonce"


async def test_key_rotation_refetches_once_and_a_swapped_key_fails_the_signature(tmp_path: Path) -> None:
    async with running_server(tmp_path, parts=SSO_PARTS) as srv:
        redirect = [f"{srv.url}/oidc/callback"]
        port = None
        async with httpx.AsyncClient(follow_redirects=False) as http:

            async def round_trip(keys: list[dict[str, Any]]) -> httpx.Response:
                nonlocal port
                async with oidc_provider(redirect_uris=redirect, accounts=ACCOUNTS, keys=keys, port=port) as peer:
                    if port is None:
                        port = peer.port
                        async with RpcClient(srv.ws_url, srv.owner_token) as c:
                            config = {"enabled": True, "issuer": peer.issuer, "clientId": "hangar"}
                            await c.call("sso.saveConfig", kind="oidc", config=config)
                    return await drive_login(http, f"{srv.url}/oidc/login?relay=desktop", login="alice")

            service = srv.ctx.service(OidcService)
            token_of(await round_trip([signing_key("k1")]))
            keys = (await service.provider(f"http://127.0.0.1:{port}"))[1]
            assert keys.fetches == 1
            # The provider rotated to a new key id: one refetch, and the sign-in goes through.
            token_of(await round_trip([signing_key("k2")]))
            assert keys.fetches == 2
            # Same key id, different key material: the cached key does not verify the signature.
            resp = await round_trip([signing_key("k2")])
            assert resp.status_code == 400 and "<code id='code'>signature</code>" in resp.text
            assert keys.fetches == 2


async def test_session_policy_applies_to_sso_credentials(tmp_path: Path) -> None:
    clock = FakeClock(datetime.now(UTC))
    async with setup(tmp_path, clock=clock) as s:
        await s.save()
        token = token_of(await s.login("alice"))
        async with RpcClient(s.srv.ws_url, s.srv.owner_token) as c:
            await c.call("sso.setSessionPolicy", maxAgeMinutes=30, idleTimeoutMinutes=0)
        headers = {"authorization": f"Bearer {token}"}
        assert (await s.http.get(f"{s.srv.url}/auth/me", headers=headers)).status_code == 200
        clock.advance(31 * 60)
        late = await s.http.get(f"{s.srv.url}/auth/me", headers=headers)
        assert late.status_code == 401 and "maximum age" in late.json()["error"]["message"]
        with pytest.raises((RpcError, ConnectionError, websockets.ConnectionClosed)):
            await me(s.srv, token)


async def test_scim_provisioned_user_signs_in_and_scim_deactivation_locks_them_out(tmp_path: Path) -> None:
    async with setup(tmp_path) as s:
        await s.save(allowJit=False)
        token = s.srv.ctx.service(SsoConfigStore).regenerate_scim_token()
        headers = {"authorization": f"Bearer {token}"}
        async with httpx.AsyncClient(base_url=f"{s.srv.url}/scim/v2", headers=headers) as scim:
            made = await scim.post("/Users", json={"userName": "alice@example.com", "displayName": "Alice"})
            assert made.status_code == 201
            uid = made.json()["id"]
            # Provisioned ahead of time, linked at first sign-in by the provider's verified email.
            credential = token_of(await s.login("alice"))
            assert (await me(s.srv, credential))["id"] == uid
            user = await s.srv.ctx.service(IdentityService).get_user(uid)
            assert user is not None and user.sso_subject == "alice"
            off = {
                "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
                "Operations": [{"op": "replace", "path": "active", "value": False}],
            }
            assert (await scim.patch(f"/Users/{uid}", json=off)).status_code == 200
        refused = await s.login("alice")
        assert failure_code(refused) == "invalid" and "deactivated" in refused.text
        with pytest.raises((RpcError, ConnectionError, websockets.ConnectionClosed)):
            await me(s.srv, credential)


async def test_a_sign_in_left_pending_too_long_is_refused(tmp_path: Path) -> None:
    clock = FakeClock(datetime.now(UTC))
    async with setup(tmp_path, clock=clock) as s:
        await s.save()
        start = await s.http.get(f"{s.srv.url}/oidc/login?relay=desktop")
        callback_url = await drive_to_callback(s.http, start, f"{s.srv.url}/oidc/callback", login="alice")
        clock.advance(11 * 60)  # pending sign-ins live 10 minutes
        resp = await s.http.get(callback_url)
        assert failure_code(resp) == "state" and "too long" in resp.text


async def test_provider_gone_before_the_code_exchange_is_internal(tmp_path: Path) -> None:
    async with (
        running_server(tmp_path, parts=SSO_PARTS) as srv,
        httpx.AsyncClient(follow_redirects=False, headers={"accept": "application/json"}) as http,
    ):
        async with oidc_provider(redirect_uris=[f"{srv.url}/oidc/callback"], accounts=ACCOUNTS) as peer:
            async with RpcClient(srv.ws_url, srv.owner_token) as c:
                config = {"enabled": True, "issuer": peer.issuer, "clientId": peer.client_id}
                await c.call("sso.saveConfig", kind="oidc", config=config)
            start = await http.get(f"{srv.url}/oidc/login?relay=desktop")
            callback_url = await drive_to_callback(http, start, f"{srv.url}/oidc/callback", login="alice")
        # The provider has stopped: the token endpoint cannot be reached.
        resp = await http.get(callback_url)
        assert resp.status_code == 400 and resp.json()["error"]["code"] == "internal"
        assert len(await srv.ctx.service(IdentityService).list_users()) == 1
