"""The web client end to end: Debian's Chromium, driven by Playwright, against a real server serving the real build
of ``web/``. Connecting with a pairing code, deep links, the ``#token=`` hand-off, a revoked credential, a server
restart under an open page; no console error on any of them, and axe finds no serious or critical violation.

Playwright only drives the browser the host already has (``executable_path``); it never downloads one."""

from __future__ import annotations

import asyncio
import gzip
import time
from pathlib import Path
from typing import Any

import pytest

from hangar.identity import IdentityService
from hangar.identity.part import IDENTITY_PART
from hangar.oversight import OVERSIGHT_PART
from hangar.sso.part import SSO_PART
from hangar.workspace.part import WORKSPACE_PART
from tests.support.chromium import CHROMIUM
from tests.support.ports import free_port
from tests.support.rpc import RpcClient
from tests.support.server import running_server
from tests.support.webclient import (
    Console,
    axe_violations,
    chromium,
    connect_with_code,
    shot,
    stored_credential,
)

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Makefile APT_PACKAGES)")


PARTS = [OVERSIGHT_PART, IDENTITY_PART, SSO_PART, WORKSPACE_PART]


async def test_connect_with_a_pairing_code_then_deep_links_keep_you_signed_in(tmp_path: Path, dist: Path) -> None:
    async with running_server(tmp_path, parts=PARTS, web_dist=dist) as srv, chromium() as browser:
        ws = await srv.new_workspace("Alpha")
        context = await browser.new_context()
        page = await context.new_page()
        console = Console(page)
        scripts: list[Any] = []
        page.on("response", lambda r: scripts.append(r) if r.request.resource_type == "script" else None)
        started = time.perf_counter()
        await page.goto(srv.url + "/")
        await page.get_by_role("heading", name="Connect to Hangar").wait_for()
        seen_ms = (time.perf_counter() - started) * 1000
        render_ms = await page.evaluate("performance.getEntriesByName('hangar:first-render')[0].startTime")
        js = [await r.body() for r in scripts]
        assert js, "the shell loaded no script"
        gzipped = sum(len(gzip.compress(b, 9)) for b in js)
        # Figures for the README (run with -s to see them); the budget is the issue's, not a timing assertion.
        print(f"\nfirst load: {len(js)} script(s), {sum(map(len, js))} bytes, {gzipped} bytes gzipped")
        print(f"connect screen: first render {render_ms:.0f} ms after navigation start ({seen_ms:.0f} ms seen)")
        assert gzipped <= 250 * 1024
        # The server sends them gzipped (the browser asks for it), so the bytes on the wire are about those.
        sent = [(await r.all_headers()) for r in scripts]
        assert all(h.get("content-encoding") == "gzip" and h.get("vary") == "Accept-Encoding" for h in sent), sent
        print(f"first load sent: {sum(int(h['content-length']) for h in sent)} bytes of script")
        assert page.url == srv.url + "/connect"
        assert await axe_violations(page) == []
        await shot(page, "connect")

        await connect_with_code(page, srv)
        link = page.get_by_role("link", name="Alpha")
        await link.wait_for()
        assert page.url == srv.url + "/"
        await page.get_by_role("status").filter(has_text="Connected").wait_for()
        assert await axe_violations(page) == []
        token = await page.evaluate("localStorage.getItem('hangar.token')")
        assert token and token != srv.owner_token
        async with RpcClient(srv.ws_url, token) as c:
            devices = await c.call("devices.list")
        assert any(d["name"] == "Test browser" and d["current"] for d in devices)

        await link.click()
        await page.get_by_role("heading", name="Alpha", exact=True).wait_for()
        assert page.url == f"{srv.url}/workspaces/{ws}"
        await page.reload()
        await page.get_by_role("heading", name="Alpha", exact=True).wait_for()
        assert page.url == f"{srv.url}/workspaces/{ws}"
        assert await axe_violations(page) == []

        # A deep link opened in a new tab of the same browser profile is signed in too.
        other = await context.new_page()
        Console(other)
        await other.goto(f"{srv.url}/workspaces/{ws}")
        await other.get_by_role("heading", name="Alpha", exact=True).wait_for()

        # Sign out: back to the connect screen, and the credential no longer works on the server.
        await page.get_by_role("button", name="Sign out").click()
        await page.get_by_role("heading", name="Connect to Hangar").wait_for()
        assert await page.evaluate("localStorage.getItem('hangar.token')") is None
        with pytest.raises(Exception, match=r"unauthenticated|4401"):
            async with RpcClient(srv.ws_url, token) as c:
                await c.call("users.me")
        assert console.errors == []


async def test_wrong_code_is_explained_and_the_dark_phone_layout_is_accessible(tmp_path: Path, dist: Path) -> None:
    async with running_server(tmp_path, parts=PARTS, web_dist=dist) as srv, chromium() as browser:
        await srv.new_workspace("Beta")
        context = await browser.new_context(viewport={"width": 375, "height": 740}, color_scheme="dark")
        page = await context.new_page()
        console = Console(page)
        await page.goto(srv.url + "/connect")
        await page.get_by_role("textbox", name="Pairing code").fill("NOT-A-CODE")
        await page.get_by_role("button", name="Connect", exact=True).click()
        alert = page.get_by_role("alert")
        await alert.wait_for()
        assert "code" in (await alert.inner_text()).lower()
        assert await axe_violations(page) == []
        await connect_with_code(page, srv)
        await page.get_by_role("link", name="Beta").wait_for()
        assert await axe_violations(page) == []
        background = await page.evaluate("getComputedStyle(document.body).backgroundColor")
        assert background == "rgb(13, 17, 23)"  # the dark theme
        overflow = await page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, "the page scrolls sideways at phone width"
        # The failed pairing answered 400, which Chromium reports on the console; nothing else may.
        assert [e for e in console.errors if "400" not in e] == []


async def test_token_handoff_strips_the_fragment_and_a_revoked_credential_returns_to_connect(
    tmp_path: Path, dist: Path
) -> None:
    async with running_server(tmp_path, parts=PARTS, web_dist=dist) as srv, chromium() as browser:
        ws = await srv.new_workspace("Gamma")
        identity = srv.ctx.service(IdentityService)
        token = await identity.issue_device(srv.owner_id, "handed-over")
        page = await browser.new_page()
        console = Console(page)
        await page.goto(f"{srv.url}/workspaces/{ws}#token={token}")
        # The browser keeps no credential, so there is nothing to replace: taken without a question (CONTRACTS 9).
        await page.get_by_role("heading", name="Gamma", exact=True).wait_for()
        assert page.url == f"{srv.url}/workspaces/{ws}"
        assert await page.evaluate("location.hash") == ""
        assert await page.evaluate("localStorage.getItem('hangar.token')") == token

        async with RpcClient(srv.ws_url, token) as c:
            device_id = (await c.call("users.me"))["deviceId"]
        await identity.revoke_device_id(device_id)
        await page.get_by_role("heading", name="Connect to Hangar").wait_for(timeout=15_000)
        assert page.url.startswith(f"{srv.url}/connect")
        assert "no longer accepted" in await page.get_by_role("alert").inner_text()
        assert await page.evaluate("localStorage.getItem('hangar.token')") is None
        # Connecting again lands on the page the person was on.
        await connect_with_code(page, srv)
        await page.get_by_role("heading", name="Gamma", exact=True).wait_for()
        assert page.url == f"{srv.url}/workspaces/{ws}"
        assert console.errors == []


async def test_the_client_reconnects_after_a_server_restart_and_its_watch_resumes(tmp_path: Path, dist: Path) -> None:
    port = free_port()
    async with chromium() as browser:
        async with running_server(tmp_path, parts=PARTS, web_dist=dist, port=port) as srv:
            ws = await srv.new_workspace("Delta")
            token = await srv.ctx.service(IdentityService).issue_device(srv.owner_id, "restart-test")
            page = await (await browser.new_context(storage_state=stored_credential(srv.url, token))).new_page()
            console = Console(page)
            await page.goto(f"{srv.url}/workspaces/{ws}")
            await page.get_by_role("heading", name="Delta", exact=True).wait_for()
            status = page.get_by_role("status")
            await status.filter(has_text="Connected").wait_for()
            async with RpcClient(srv.ws_url, token) as c:
                await c.call("spaces.create", workspace_id=ws, title="before")
            activity = page.get_by_role("list", name="Recent events, newest first")
            await activity.get_by_text("Space created").first.wait_for()
            assert await activity.get_by_role("listitem").count() >= 1
            before = await activity.get_by_role("listitem").count()
        await status.filter(has_text="Reconnecting").wait_for()
        await asyncio.sleep(1.0)  # a few attempts fail while nothing listens
        async with running_server(tmp_path, parts=PARTS, web_dist=dist, port=port) as srv:
            await status.filter(has_text="Connected").wait_for(timeout=30_000)
            async with RpcClient(srv.ws_url, token) as c:
                await c.call("spaces.create", workspace_id=ws, title="after")
            await activity.get_by_role("listitem").nth(before).wait_for()
            assert await activity.get_by_role("listitem").count() == before + 1
            await page.get_by_role("link", name="Workspaces").click()
            await page.get_by_role("link", name="Delta").wait_for()
        # While the server was down, Chromium reports each refused socket on the console; nothing else may.
        assert [e for e in console.errors if "WebSocket connection" not in e] == []
