"""Single sign-on from the web client's connect screen, end to end in Debian's Chromium driven by Playwright: the
provider button opens the ``web-popup`` sign-in in a popup, the real OpenID provider peer signs the person in, the
server's popup page posts the credential back to the connect tab and closes, and the tab is signed in. Where
pop-ups are blocked the same sign-in runs in the tab itself. Both carry the tab's own state, so neither asks the
person to confirm (a credential from anyone else's link would be)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from playwright.async_api import Error as PlaywrightError

from tests.peers.oidc_provider import oidc_sign_in
from tests.peers.sso_parts import SSO_PARTS
from tests.support.chromium import CHROMIUM
from tests.support.rpc import RpcClient
from tests.support.server import running_server
from tests.support.webclient import Console, axe_violations, built_web_client, chromium

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Makefile APT_PACKAGES)")


async def sign_in_in_popup(
    popup: Any,
    *,
    login: str,
    password: str = "any-password",
    max_steps: int = 20,
    app: str | None = None,
) -> None:
    """Work through the provider's login and consent forms in ``popup`` until our popup page closes it (or, for a
    sign-in in the tab itself, until the page is back on a screen of the web client at ``app``)."""
    for _ in range(max_steps):
        if popup.is_closed():
            return
        if app is not None and popup.url.startswith(app + "/"):
            await popup.wait_for_url(back_in_the_app(app))  # through /oidc/callback and /auth/complete
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


def back_in_the_app(app: str) -> Callable[[str], bool]:
    """Whether an address is a page of the web client at ``app`` (not the sign-in's own routes on the way)."""

    def done(url: str) -> bool:
        return url.startswith(app + "/") and not url.startswith((app + "/oidc/", app + "/auth/"))

    return done


async def test_sso_through_the_popup_signs_the_connect_tab_in(tmp_path: Path) -> None:
    dist = built_web_client()
    async with running_server(tmp_path, parts=SSO_PARTS, web_dist=dist) as srv, chromium() as browser:
        accounts = {"alice": {"email": "alice@example.com", "email_verified": True, "name": "Alice"}}
        async with oidc_sign_in(srv, accounts):
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
            # The popup's first address: our login, declaring the connect tab's origin and a state the tab keeps.
            origin = quote(srv.url, safe="")
            login = f"{srv.url}/oidc/login?relay=web-popup&client_origin={origin}&client_state="
            started = [u for u in requested if u.startswith(login)]
            assert len(started) == 1, requested
            assert re.fullmatch(r"[A-Za-z0-9_-]{43}", started[0][len(login) :])
            assert popup.is_closed()

            # Signed in without a question: the answer echoed the state this tab kept, which is now used up.
            await page.get_by_role("heading", name="Workspaces").wait_for()
            assert await page.get_by_role("heading", name="Sign in?").count() == 0
            assert await page.evaluate("sessionStorage.getItem('hangar.signin.states')") is None
            assert page.url == srv.url + "/"
            token = await page.evaluate("localStorage.getItem('hangar.token')")
            assert token and token != srv.owner_token
            async with RpcClient(srv.ws_url, token) as c:
                assert (await c.call("users.me"))["email"] == "alice@example.com"
            assert await axe_violations(page) == []
            assert console.errors == []


async def test_with_pop_ups_blocked_the_sign_in_runs_in_the_tab_and_comes_back_signed_in(tmp_path: Path) -> None:
    dist = built_web_client()
    async with running_server(tmp_path, parts=SSO_PARTS, web_dist=dist) as srv, chromium() as browser:
        accounts = {"bob": {"email": "bob@example.com", "email_verified": True, "name": "Bob"}}
        async with oidc_sign_in(srv, accounts):
            context = await browser.new_context()
            await context.add_init_script("window.open = () => null;")  # what a pop-up blocker answers
            page = await context.new_page()
            # The provider's pages run in this tab too, loading resources from elsewhere: only our pages' errors count.
            ours: list[str] = []
            page.on(
                "console",
                lambda m: ours.append(m.text) if m.type == "error" and m.location["url"].startswith(srv.url) else None,
            )
            page.on("pageerror", lambda e: ours.append(f"uncaught: {e}"))
            await page.goto(srv.url + "/connect")
            button = page.get_by_role("button", name="Sign in with", exact=False)
            async with page.expect_navigation():
                await button.click()
            await sign_in_in_popup(page, login="bob", app=srv.url)

            # Back through /auth/complete to the app, which took the credential without a question.
            await page.get_by_role("heading", name="Workspaces").wait_for()
            assert page.url == srv.url + "/"
            assert await page.get_by_role("heading", name="Sign in?").count() == 0
            token = await page.evaluate("localStorage.getItem('hangar.token')")
            assert token
            async with RpcClient(srv.ws_url, token) as c:
                assert (await c.call("users.me"))["email"] == "bob@example.com"
            assert ours == []
