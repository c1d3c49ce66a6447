"""Signing an MCP client in the way MCP clients expect, end to end: the official MCP SDK's OAuth client
(``OAuthClientProvider``) against a real running server discovers the authorization server from ``/mcp``'s 401,
registers itself, and sends the person to the sign-in page, which headless Chromium works through like a person
(a pairing code, or the SSO login at a real OpenID provider; then consent); the code comes back to a loopback
redirect URI, and the SDK's MCP session then works within exactly what the person chose."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientMetadata

from hangar.core.principal import Role
from hangar.identity import IdentityService
from hangar.oauth.part import OAUTH_PART
from tests.peers.oidc_provider import oidc_provider, sign_in_in_browser
from tests.peers.sso_parts import SSO_PARTS
from tests.support.chromium import CHROMIUM, Page, browser_page
from tests.support.mcp import payload
from tests.support.oauth import MemoryTokens, authorize_url, loopback_callback, pkce, register
from tests.support.rpc import RpcClient, RpcError
from tests.support.server import RunningServer, running_server

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Makefile APT_PACKAGES)")


async def _pairing_code(srv: RunningServer, token: str) -> str:
    async with RpcClient(srv.ws_url, token) as c:
        code: str = (await c.call("devices.pairingCode"))["code"]
    return code


async def _consent(page: Page, *, workspace: str, access: str) -> None:
    await page.wait_for("!!document.querySelector('form#consent')")
    await page.submit("form#consent", {"workspace": workspace, "access": access}, button="#approve")


async def test_the_sdk_client_signs_in_with_a_pairing_code_and_gets_what_was_chosen(tmp_path: Path) -> None:
    async with running_server(tmp_path / "data") as srv:
        alpha, beta = await srv.new_workspace("Alpha"), await srv.new_workspace("Beta")
        alice = await srv.new_user_token(alpha, Role.member, name="alice")
        identity = srv.ctx.service(IdentityService)
        await identity.add_member(beta, (await identity.authenticate(alice)).user_id, Role.member)
        code = await _pairing_code(srv, alice)
        seen: dict[str, Any] = {}

        async with browser_page(tmp_path / "profile") as page, loopback_callback() as callback:

            async def sign_in(url: str) -> None:
                seen["authorize"] = url
                await page.navigate(url)
                await page.wait_for("!!document.querySelector('form#pair')")
                seen["sign_in_page"] = await page.evaluate("document.body.innerText")
                await page.submit("form#pair", {"code": code})
                await _consent(page, workspace=alpha, access="read")
                await page.wait_for("!!document.getElementById('done')")

            storage = MemoryTokens()
            provider = OAuthClientProvider(
                server_url=f"{srv.url}/mcp",
                client_metadata=OAuthClientMetadata(
                    client_name="Test agent",
                    redirect_uris=[callback.uri],  # type: ignore[list-item]
                    token_endpoint_auth_method="none",
                ),
                storage=storage,
                redirect_handler=sign_in,
                callback_handler=callback.result,
            )
            sent: list[str] = []

            async def record(request: httpx2.Request) -> None:
                sent.append(f"{request.method} {request.url.path}")

            async with (
                httpx2.AsyncClient(auth=provider, timeout=60, event_hooks={"request": [record]}) as http,
                streamable_http_client(f"{srv.url}/mcp", http_client=http) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                assert any(t.name == "spaces.list" for t in (await session.list_tools()).tools)
                listed = await session.call_tool("spaces.list", {"workspace_id": alpha})
                assert listed.is_error is False and payload(listed)["spaces"] == []
                change = await session.call_tool("spaces.create", {"workspace_id": alpha, "title": "x"})
                assert change.is_error is True and "read-only" in payload(change)["error"]["message"]
                other = await session.call_tool("spaces.list", {"workspace_id": beta})
                assert other.is_error is True and f"limited to workspace {alpha}" in payload(other)["error"]["message"]
                # An hour later (as the client sees it): the SDK refreshes, and the same session goes on.
                provider.context.token_expiry_time = time.time() - 1
                again = await session.call_tool("spaces.list", {"workspace_id": alpha})
                assert again.is_error is False

            # The grant is one of Alice's devices, named after the client, narrowed as she chose; audited.
            async with RpcClient(srv.ws_url, alice) as c:
                device = next(d for d in await c.call("devices.list") if d["name"] == "Test agent (OAuth)")
            async with RpcClient(srv.ws_url, srv.owner_token) as owner:
                rows = await owner.call("audit.list", workspace_id=alpha)
    assert device["workspaceId"] == alpha and device["readOnly"] is True and device["expiresAt"]
    granted = next(r for r in rows if r["action"] == "oauth.authorized")
    assert granted["details"]["workspace"] == alpha and granted["details"]["signedInWith"] == "pairing"
    # Discovery found everything at the first address it tried.
    assert sent[:5] == [
        "POST /mcp",
        "GET /.well-known/oauth-protected-resource",
        "GET /.well-known/oauth-authorization-server",
        "POST /auth/oauth/register",
        "POST /auth/oauth/token",
    ], sent
    # The sign-in page named the client and where it goes.
    assert seen["authorize"].startswith(f"{srv.url}/auth/oauth/authorize?")
    assert "Test agent" in seen["sign_in_page"] and callback.uri in seen["sign_in_page"]
    assert sent.count("POST /auth/oauth/token") == 2 and sent.count("POST /mcp") >= 5
    first, renewed = storage.history
    assert renewed.access_token != first.access_token and renewed.refresh_token != first.refresh_token
    assert renewed.expires_in == 3600
    assert storage.client is not None and storage.client.client_id.startswith("hoc_")


async def test_the_sign_in_page_signs_in_through_sso_and_comes_back_to_the_request(tmp_path: Path) -> None:
    async with running_server(tmp_path / "data", parts=[*SSO_PARTS, OAUTH_PART]) as srv:
        ws = await srv.new_workspace("Alpha")
        accounts = {"alice": {"email": "alice@example.com", "email_verified": True, "name": "Alice"}}
        async with oidc_provider(redirect_uris=[f"{srv.url}/oidc/callback"], accounts=accounts) as peer:
            async with RpcClient(srv.ws_url, srv.owner_token) as c:
                config = {"enabled": True, "issuer": peer.issuer, "clientId": peer.client_id}
                await c.call("sso.saveConfig", kind="oidc", config=config)
            async with (
                browser_page(tmp_path / "profile") as page,
                loopback_callback() as callback,
                httpx.AsyncClient(timeout=30) as http,
            ):
                client = await register(http, srv.url, client_name="Cursor", redirect_uris=[callback.uri])
                verifier, challenge = pkce()
                await page.navigate(authorize_url(srv.url, client, challenge, state="s-1"))
                await page.wait_for("!!document.getElementById('sso-oidc')")
                await page.evaluate("document.getElementById('sso-oidc').click(); true")
                # The click starts a navigation; until it lands, the page is still the one with the button.
                await page.wait_for("!location.pathname.startsWith('/auth/oauth/authorize')")
                await sign_in_in_browser(page, login="alice", until=f"{srv.url}/auth/oauth/consent")
                person = await page.evaluate("document.getElementById('person').textContent")
                await _consent(page, workspace="*", access="write")
                got = await callback.query()
                assert got["state"] == "s-1" and got["iss"] == srv.url
                token = await http.post(
                    f"{srv.url}/auth/oauth/token",
                    data={
                        "grant_type": "authorization_code",
                        "code": got["code"],
                        "redirect_uri": callback.uri,
                        "client_id": client["client_id"],
                        "code_verifier": verifier,
                    },
                )
                assert token.status_code == 200, token.text
                async with RpcClient(srv.ws_url, token.json()["access_token"]) as c:
                    me = await c.call("users.me")
                    # All workspaces and changes allowed: the person's own reach, server-wide changes included,
                    # but never minting a lasting credential of the person outside the grant.
                    assert (await c.call("workspaces.create", name="From the client"))["id"]
                    with pytest.raises(RpcError, match="your own device"):
                        await c.call("devices.pairingCode")
    assert person == "Alice (alice@example.com)"
    assert me["email"] == "alice@example.com" and [w["id"] for w in me["workspaces"]] == [ws]
