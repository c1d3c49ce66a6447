"""Login CSRF through the credential hand-off, attacked end to end in Debian's Chromium against a real server.

Someone who holds a credential of their own (Mallory) sends a link that carries it: ``/#token=<hers>``, or the
whole hand-off of an SSO sign-in she ran herself (``/auth/complete#token=<hers>&state=<hers>``). Opened silently,
it would sign the person's browser into Mallory's account, and what they then type would land in her
workspaces. The web client takes a credential without asking only in answer to a sign-in it started (a state it
kept in ``sessionStorage``, echoed by the hand-off); any other is shown, with whose account it is, and used only
after a click. The fragment leaves the address at once in every case."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from hangar.identity import IdentityService
from hangar.identity.part import IDENTITY_PART
from hangar.oversight import OVERSIGHT_PART
from hangar.sso.part import SSO_PART
from hangar.workspace.part import WORKSPACE_PART
from tests.peers.oidc_provider import drive_login, oidc_sign_in
from tests.support.chromium import CHROMIUM
from tests.support.rpc import RpcClient
from tests.support.server import RunningServer, running_server
from tests.support.webclient import Console, axe_violations, chromium, stored_credential

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Makefile APT_PACKAGES)")

PARTS = [OVERSIGHT_PART, IDENTITY_PART, SSO_PART, WORKSPACE_PART]
TOKEN_KEY = "hangar.token"


async def user_with_workspace(srv: RunningServer, name: str, workspace: str) -> str:
    """A user named ``name`` (email ``<name>@example.test``) owning ``workspace``; their credential."""
    token = await srv.new_user_token(name=name)
    await srv.new_workspace(workspace, owner_token=token)
    return token


def frames_sent(page: Any) -> list[str]:
    """Every frame ``page`` sends on a WebSocket (the RPC socket's first frame carries its credential)."""
    sent: list[str] = []
    page.on("websocket", lambda ws: ws.on("framesent", lambda payload: sent.append(str(payload))))
    return sent


async def stored(page: Any) -> str | None:
    value = await page.evaluate(f"localStorage.getItem('{TOKEN_KEY}')")
    return value if isinstance(value, str) else None


async def test_an_attackers_link_neither_replaces_nor_uses_the_stored_credential(tmp_path: Path, dist: Path) -> None:
    async with running_server(tmp_path, parts=PARTS, web_dist=dist) as srv, chromium() as browser:
        victim = await user_with_workspace(srv, "Victor", "Victor's work")
        attacker = await user_with_workspace(srv, "Mallory", "Mallory's trap")
        context = await browser.new_context(storage_state=stored_credential(srv.url, victim))
        home = await context.new_page()
        await home.goto(srv.url + "/")
        await home.get_by_role("link", name="Victor's work").wait_for()

        # The victim follows the attacker's link in a new tab of the same browser.
        page = await context.new_page()
        console = Console(page)
        sent = frames_sent(page)
        await page.goto(f"{srv.url}/#token={attacker}")
        await page.get_by_role("heading", name="Switch accounts?").wait_for(timeout=15_000)
        card = page.get_by_role("region", name="The link's sign-in")
        await card.get_by_text("Mallory", exact=True).wait_for()
        await card.get_by_text("Victor", exact=True).wait_for()
        assert "127.0.0.1" in await card.inner_text()  # the server it would sign in to
        assert await page.evaluate("location.hash") == "" and "token" not in page.url
        assert await stored(page) == victim
        assert await axe_violations(page) == []

        # Declining keeps the victim where they were; the attacker's credential never went over the socket.
        await page.get_by_role("button", name="Stay signed in as Victor").click()
        await page.get_by_role("link", name="Victor's work").wait_for()
        assert await page.get_by_role("link", name="Mallory's trap").count() == 0
        assert await stored(page) == victim
        assert sent and all(attacker not in frame for frame in sent)
        assert any(victim in frame for frame in sent)

        # The same link pushed into an open tab (a fragment change, no reload) is asked about too.
        await home.evaluate("t => { location.hash = 'token=' + encodeURIComponent(t); }", attacker)
        await home.get_by_role("heading", name="Switch accounts?").wait_for()
        assert await stored(home) == victim and await home.evaluate("location.hash") == ""
        await home.get_by_role("button", name="Stay signed in as Victor").click()
        await home.get_by_role("link", name="Victor's work").wait_for()
        assert await stored(home) == victim
        assert console.errors == []


async def test_switching_on_purpose_takes_a_click_naming_the_account(tmp_path: Path, dist: Path) -> None:
    async with running_server(tmp_path, parts=PARTS, web_dist=dist) as srv, chromium() as browser:
        mine = await user_with_workspace(srv, "Victor", "Victor's work")
        other = await user_with_workspace(srv, "Wendy", "Wendy's work")
        page = await (await browser.new_context(storage_state=stored_credential(srv.url, mine))).new_page()
        console = Console(page)
        await page.goto(f"{srv.url}/#token={other}")
        await page.get_by_role("button", name="Switch to Wendy").click()
        await page.get_by_role("link", name="Wendy's work").wait_for()
        assert await stored(page) == other
        async with RpcClient(srv.ws_url, other) as c:
            assert (await c.call("users.me"))["displayName"] == "Wendy"
        assert console.errors == []


async def test_a_link_into_a_browser_without_a_credential_signs_in_without_a_question(
    tmp_path: Path, dist: Path
) -> None:
    """CONTRACTS.md 9: with no credential kept there is nothing to replace, so the link is taken silently (and
    still leaves the address bar)."""
    async with running_server(tmp_path, parts=PARTS, web_dist=dist) as srv, chromium() as browser:
        owner = await user_with_workspace(srv, "Olive", "Olive's work")
        page = await (await browser.new_context()).new_page()
        console = Console(page)
        await page.goto(f"{srv.url}/#token={owner}")
        await page.get_by_role("link", name="Olive's work").wait_for(timeout=15_000)
        assert await stored(page) == owner and await page.evaluate("location.hash") == ""
        assert await page.get_by_role("heading", name="Sign in?").count() == 0
        assert console.errors == []


async def test_a_link_whose_credential_the_server_refuses_changes_nothing(tmp_path: Path, dist: Path) -> None:
    async with running_server(tmp_path, parts=PARTS, web_dist=dist) as srv, chromium() as browser:
        mine = await user_with_workspace(srv, "Victor", "Victor's work")
        revoked = await srv.ctx.service(IdentityService).issue_device(srv.owner_id, "soon revoked")
        async with RpcClient(srv.ws_url, revoked) as c:
            device = (await c.call("users.me"))["deviceId"]
        await srv.ctx.service(IdentityService).revoke_device_id(device)
        page = await (await browser.new_context(storage_state=stored_credential(srv.url, mine))).new_page()
        for link in (f"{srv.url}/#token={revoked}", f"{srv.url}/#token=made-up"):
            await page.goto(link)
            alert = page.get_by_role("alert")
            await alert.wait_for()
            assert "does not work" in await alert.inner_text()
            assert await stored(page) == mine
            await page.get_by_role("button", name="Continue").click()
            await page.get_by_role("link", name="Victor's work").wait_for()
            assert await stored(page) == mine


async def test_a_forged_hand_off_with_a_state_this_tab_did_not_keep_is_refused(tmp_path: Path, dist: Path) -> None:
    """The victim's connect tab has a sign-in of its own under way. Mallory runs an SSO sign-in herself, under a
    state she chose, and sends the whole hand-off; and a page of the origin posts her credential to the tab as
    the popup would. Neither signs the tab in: the state is not one the tab kept."""
    async with running_server(tmp_path, parts=PARTS, web_dist=dist) as srv, chromium() as browser:
        accounts = {"mallory": {"email": "mallory@example.com", "email_verified": True, "name": "Mallory"}}
        async with oidc_sign_in(srv, accounts):
            async with httpx.AsyncClient(follow_redirects=False) as her_browser:
                done = await drive_login(her_browser, f"{srv.url}/oidc/login?client_state={'m' * 43}", login="mallory")
            assert done.status_code == 303
            forged = done.headers["location"]
            assert forged.startswith("/auth/complete#token=") and forged.endswith(f"&state={'m' * 43}")
            her_token = forged.split("#token=", 1)[1].split("&", 1)[0]

            context = await browser.new_context()
            page = await context.new_page()
            console = Console(page)
            await page.goto(srv.url + "/connect")
            button = page.get_by_role("button", name="Sign in with", exact=False)
            async with context.expect_page() as opened:
                await button.click()  # the victim's own sign-in: the tab keeps its state
            await (await opened.value).close()
            kept = await page.evaluate("sessionStorage.getItem('hangar.signin.states')")
            assert kept and "m" * 43 not in kept

            # A message as the popup page would post it, with her credential and a state the tab never made.
            await page.evaluate(
                "t => window.postMessage({type: 'hangar:sso', token: t, state: 'x'.repeat(43)}, location.origin)",
                her_token,
            )
            await page.get_by_text("A sign-in answer this tab did not ask for was ignored").wait_for()
            assert await stored(page) is None
            assert await page.get_by_role("heading", name="Connect to Hangar").is_visible()

            # Her complete hand-off, through the server's own landing page: asked about, not taken.
            await page.goto(srv.url + forged)
            await page.get_by_role("heading", name="Sign in?").wait_for(timeout=15_000)
            await page.get_by_role("region", name="The link's sign-in").get_by_text("Mallory", exact=True).wait_for()
            assert await stored(page) is None
            assert page.url == srv.url + "/" and await page.evaluate("location.hash") == ""
            assert console.errors == []
