"""The server owner's first sign-in through the door, in Debian's Chromium against real servers: the link the
first start of ``hangar serve`` prints signs a browser without a credential in as the owner; the same link again,
or a late one, is refused with a sentence that says to print a new one; a browser that is signed in already is
asked before the link's credential replaces its own (login CSRF: the rule of a ``#token=`` link), and a declined
one is revoked. The connect screen says how an owner gets in, and takes what an owner pastes there (a credential,
a whole link) for what it is. No serious or critical axe violation on any of these screens, light and dark,
desktop and phone width."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from hangar.core.clock import FakeClock
from hangar.identity import IdentityService, Pairing
from hangar.identity.pairing import SIGN_IN_LINK_LIFETIME
from hangar.identity.part import IDENTITY_PART
from hangar.oversight import OVERSIGHT_PART
from hangar.sso.part import SSO_PART
from hangar.workspace.part import WORKSPACE_PART
from tests.support.chromium import CHROMIUM
from tests.support.processes import serve_from_checkout
from tests.support.server import RunningServer, running_server
from tests.support.webclient import Console, axe_violations, chromium, stored_credential

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Makefile APT_PACKAGES)")

PARTS = [OVERSIGHT_PART, IDENTITY_PART, SSO_PART, WORKSPACE_PART]
LOOKS = [
    {"viewport": {"width": 1280, "height": 800}, "color_scheme": "light"},
    {"viewport": {"width": 375, "height": 740}, "color_scheme": "dark"},
]


async def stored(page: Any) -> str | None:
    value = await page.evaluate("localStorage.getItem('hangar.token')")
    return value if isinstance(value, str) else None


async def whose(url: str, token: str | None) -> dict[str, Any]:
    async with httpx.AsyncClient() as http:
        me = await http.get(f"{url}/auth/me", headers={"Authorization": f"Bearer {token}"})
    assert me.status_code == 200, me.text
    answer: dict[str, Any] = me.json()
    return answer


async def refused_link_screen(page: Any) -> str:
    await page.get_by_role("heading", name="This sign-in link does not work").wait_for(timeout=15_000)
    text: str = await page.get_by_role("alert").inner_text()
    assert "used already or has expired" in text and "Print a new one" in text and "hangar admin sign-in-link" in text
    return text


def not_the_refusals(errors: list[str]) -> list[str]:
    """Console errors other than Chromium's line for a refused request (a 400 or 401 the screen explains)."""
    return [e for e in errors if "400" not in e and "401" not in e]


async def test_the_first_start_prints_a_link_that_signs_the_owner_in_once(tmp_path: Path, dist: Path) -> None:
    data = tmp_path / "data"
    with serve_from_checkout(data, until="sign-in link", env={"HANGAR_WEB_DIST": str(dist)}) as lines:
        server, link = lines["server"], lines[next(k for k in lines if k.startswith("sign-in link"))]
        assert link.startswith(f"{server}/#signin=")

        async with chromium() as browser:
            page = await (await browser.new_context()).new_page()
            console = Console(page)
            await page.goto(link)
            await page.get_by_role("heading", name="Workspaces").wait_for(timeout=15_000)
            assert await page.evaluate("location.hash") == "" and "signin" not in page.url
            me = await whose(server, await stored(page))
            assert me["isServerOwner"] is True and me["displayName"] == "Server owner"
            assert console.errors == []

            # The same link again, in another browser: refused, saying what to do; nothing kept.
            other = await (await browser.new_context()).new_page()
            console = Console(other)
            await other.goto(link)
            await refused_link_screen(other)
            assert await stored(other) is None and await other.evaluate("location.hash") == ""
            assert await axe_violations(other) == []
            await other.get_by_role("button", name="Continue").click()
            await other.get_by_role("heading", name="Connect to Hangar").wait_for()
            owner = other.get_by_role("region", name="Server owner")
            assert "hangar admin sign-in-link" in await owner.inner_text()
            assert not_the_refusals(console.errors) == []


async def test_a_link_late_by_its_lifetime_is_refused_in_the_browser(tmp_path: Path, dist: Path) -> None:
    clock = FakeClock()
    async with running_server(tmp_path, parts=PARTS, clock=clock, web_dist=dist) as srv, chromium() as browser:
        code = await srv.ctx.service(Pairing).mint_sign_in_code(srv.owner_id)
        clock.advance(SIGN_IN_LINK_LIFETIME.total_seconds())
        for look in LOOKS:
            page = await (await browser.new_context(**look)).new_page()
            await page.goto(f"{srv.url}/#signin={code}")
            await refused_link_screen(page)
            assert await stored(page) is None
            assert await axe_violations(page) == []


async def owner_link(srv: RunningServer) -> str:
    return f"{srv.url}/#signin={await srv.ctx.service(Pairing).mint_sign_in_code(srv.owner_id)}"


async def live_devices(srv: RunningServer) -> list[str]:
    devices = await srv.ctx.service(IdentityService).list_devices(srv.owner_id)
    return sorted(d.name for d in devices if d.revoked_at is None)


async def test_a_link_into_a_signed_in_browser_asks_before_replacing_its_credential(tmp_path: Path, dist: Path) -> None:
    async with running_server(tmp_path, parts=PARTS, web_dist=dist) as srv, chromium() as browser:
        victor = await srv.new_user_token(name="Victor")
        await srv.new_workspace("Victor's work", owner_token=victor)
        before = await live_devices(srv)
        for look in LOOKS:
            context = await browser.new_context(storage_state=stored_credential(srv.url, victor), **look)
            page = await context.new_page()
            console = Console(page)
            await page.goto(await owner_link(srv))
            await page.get_by_role("heading", name="Switch accounts?").wait_for(timeout=15_000)
            card = page.get_by_role("region", name="The link's sign-in")
            await card.get_by_text("Server owner", exact=True).wait_for()
            await card.get_by_text("Victor", exact=True).wait_for()
            assert await stored(page) == victor and await page.evaluate("location.hash") == ""
            assert await axe_violations(page) == []

            # Declined: nothing changes here, and the device the link made is revoked (none is left unused).
            await page.get_by_role("button", name="Stay signed in as Victor").click()
            await page.get_by_role("link", name="Victor's work").wait_for()
            assert await stored(page) == victor
            for _ in range(100):
                if await live_devices(srv) == before:
                    break
                await page.wait_for_timeout(100)
            assert await live_devices(srv) == before
            assert console.errors == []

        # Accepted on purpose: the browser holds the owner's new credential.
        page = await (await browser.new_context(storage_state=stored_credential(srv.url, victor))).new_page()
        await page.goto(await owner_link(srv))
        await page.get_by_role("button", name="Switch to Server owner").click()
        await page.get_by_role("heading", name="Workspaces").wait_for()
        assert (await whose(srv.url, await stored(page)))["isServerOwner"] is True
        assert len(await live_devices(srv)) == len(before) + 1


async def test_the_connect_screen_says_how_the_owner_gets_in_and_takes_what_they_paste(
    tmp_path: Path, dist: Path
) -> None:
    async with running_server(tmp_path, parts=PARTS, web_dist=dist) as srv, chromium() as browser:
        for look in LOOKS:
            page = await (await browser.new_context(**look)).new_page()
            console = Console(page)
            await page.goto(srv.url + "/connect")
            owner = page.get_by_role("region", name="Server owner")
            text = await owner.inner_text()
            assert "sign-in link the server printed" in text and "hangar admin sign-in-link" in text
            assert await axe_violations(page) == []

            # A credential that does not work is named as what it is, not as a wrong pairing code.
            box = page.get_by_role("textbox", name="Pairing code")
            await box.fill("hgr_" + "x" * 43)
            await page.get_by_role("button", name="Connect", exact=True).click()
            alert = page.get_by_role("alert")
            await alert.wait_for()
            said = await alert.inner_text()
            assert "device credential, not a pairing code" in said and "unknown, used or expired" not in said
            assert await axe_violations(page) == []
            assert not_the_refusals(console.errors) == []

        # What `hangar admin owner-token` prints, pasted: signed in as the owner.
        token = await srv.ctx.service(IdentityService).issue_device(srv.owner_id, "owner-token")
        page = await (await browser.new_context()).new_page()
        await page.goto(srv.url + "/connect")
        await page.get_by_role("textbox", name="Pairing code").fill(token)
        await page.get_by_role("button", name="Connect", exact=True).click()
        await page.get_by_role("heading", name="Workspaces").wait_for()
        assert await stored(page) == token

        # A whole sign-in link pasted: its code is redeemed.
        page = await (await browser.new_context()).new_page()
        await page.goto(srv.url + "/connect")
        await page.get_by_role("textbox", name="Pairing code").fill(await owner_link(srv))
        await page.get_by_role("button", name="Connect", exact=True).click()
        await page.get_by_role("heading", name="Workspaces").wait_for()
        assert (await whose(srv.url, await stored(page)))["isServerOwner"] is True
