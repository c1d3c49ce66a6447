"""Single sign-on from the web client's connect screen, end to end in Debian's Chromium driven by Playwright: the
provider button opens the ``web-popup`` sign-in in a popup, the real OpenID provider peer signs the person in, the
server's popup page posts the credential back to the connect tab and closes, and the tab is signed in."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from playwright.async_api import Error as PlaywrightError

from tests.peers.oidc_provider import oidc_provider
from tests.peers.sso_parts import SSO_PARTS
from tests.support.chromium import CHROMIUM
from tests.support.rpc import RpcClient
from tests.support.server import running_server
from tests.support.webclient import Console, axe_violations, built_web_client, chromium

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Makefile APT_PACKAGES)")


async def sign_in_in_popup(popup: Any, *, login: str, password: str = "any-password", max_steps: int = 20) -> None:
    """Work through the provider's login and consent forms in ``popup`` until our popup page closes it."""
    for _ in range(max_steps):
        if popup.is_closed():
            return
        try:
            await popup.wait_for_load_state()
            form = popup.locator("form").first
            await form.wait_for(timeout=10_000)
        except PlaywrightError:
            if popup.is_closed():
                return
            raise
        if await popup.locator("form input[name=login]").count():
            await popup.fill("form input[name=login]", login)
            await popup.fill("form input[name=password]", password)
        try:
            async with popup.expect_navigation():
                await form.locator("button").first.click()
        except PlaywrightError:
            if popup.is_closed():
                return  # our popup page posted the credential and closed itself
            raise
    raise AssertionError(f"the sign-in did not come back; the popup is at {popup.url}")


async def test_sso_through_the_popup_signs_the_connect_tab_in(tmp_path: Path) -> None:
    dist = built_web_client()
    async with running_server(tmp_path, parts=SSO_PARTS, web_dist=dist) as srv, chromium() as browser:
        accounts = {"alice": {"email": "alice@example.com", "email_verified": True, "name": "Alice"}}
        async with oidc_provider(redirect_uris=[f"{srv.url}/oidc/callback"], accounts=accounts) as peer:
            async with RpcClient(srv.ws_url, srv.owner_token) as c:
                config = {"enabled": True, "issuer": peer.issuer, "clientId": peer.client_id}
                await c.call("sso.saveConfig", kind="oidc", config=config)
            context = await browser.new_context()
            page = await context.new_page()
            console = Console(page)
            await page.goto(srv.url + "/connect")
            button = page.get_by_role("button", name="Sign in with", exact=False)
            await button.wait_for()
            assert await axe_violations(page) == []

            requested: list[str] = []
            context.on("request", lambda r: requested.append(r.url))
            async with context.expect_page() as opened:
                await button.click()
            popup = await opened.value
            await sign_in_in_popup(popup, login="alice")
            # The popup's first address: our login, declaring the connect tab's origin for the hand-off.
            origin = quote(srv.url, safe="")
            assert f"{srv.url}/oidc/login?relay=web-popup&client_origin={origin}" in requested, requested
            assert popup.is_closed()

            await page.get_by_role("heading", name="Workspaces").wait_for()
            assert page.url == srv.url + "/"
            token = await page.evaluate("localStorage.getItem('hangar.token')")
            assert token and token != srv.owner_token
            async with RpcClient(srv.ws_url, token) as c:
                assert (await c.call("users.me"))["email"] == "alice@example.com"
            assert await axe_violations(page) == []
            assert console.errors == []
