"""A ticket's orchestration in the web client end to end: Debian's Chromium, driven by Playwright, against a real
server serving the real build, agents on a scripted model. The ticket is orchestrated from its page, the planned
DAG appears, one sub-ticket is approved, then all; each node's state and output show live, then the deliverable.
A guest sees the DAG without approval buttons. axe finds no serious or critical violation, light and dark, desktop
and phone; no console errors."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import expect

from tests.integration.test_orchestration import plan
from tests.support.chromium import CHROMIUM
from tests.support.rpc import RpcClient
from tests.support.server import RunningServer, running_server
from tests.support.webclient import axe_violations, chromium, open_signed_in, shot
from tests.unit.agents.fake_openai import FakeOpenAI, running_fake_openai, text
from tests.unit.agents.support import server_parts

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Makefile APT_PACKAGES)")

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 800}


@contextlib.asynccontextmanager
async def solo(tmp_path: Path, dist: Path) -> AsyncIterator[tuple[FakeOpenAI, RunningServer, Any, str, RpcClient]]:
    """A scripted model, a server serving the build, Chromium, a workspace with the agent Solo (model ``solo``)
    and the owner's client."""
    async with (
        running_fake_openai() as fake,
        running_server(tmp_path, parts=server_parts(), web_dist=dist) as srv,
        chromium() as browser,
    ):
        ws = await srv.new_workspace("Orchestra")
        async with RpcClient(srv.ws_url, srv.owner_token) as c:
            adapter = {"type": "openai", "baseUrl": fake.url, "model": "solo"}
            await c.call("agents.create", workspace_id=ws, name="Solo", adapter=adapter)
            yield fake, srv, browser, ws, c


def node(page: Any, title: str) -> Any:
    """A sub-ticket's row, by its link (another row names it in "After: ...")."""
    rows = page.get_by_role("list", name="Work DAG").get_by_role("listitem")
    return rows.filter(has=page.get_by_role("link", name=title, exact=True))


async def test_ticket_page_orchestrates_and_approves(tmp_path: Path, dist: Path) -> None:
    async with solo(tmp_path, dist) as (fake, srv, browser, ws, c):
        ticket = await c.call("tickets.create", workspace_id=ws, title="Launch", description="Ship it.")
        fake.script("solo", plan(("docs", []), ("code", ["docs"])))
        url = f"{srv.url}/workspaces/{ws}/tickets/{ticket['id']}"
        page, console = await open_signed_in(browser, url, srv.owner_token, viewport=DESKTOP)
        form = page.get_by_role("form", name="Orchestrate this ticket")
        await form.get_by_role("combobox", name="Agent that works the sub-tickets").select_option(label="Solo")
        await form.get_by_role("button", name="Orchestrate").click()

        await node(page, "Do docs").get_by_text("Planned").wait_for()
        await expect(node(page, "Do code")).to_contain_text("After: Do docs")

        # Before work starts, the plan is edited: a sub-ticket added after docs, then removed again; a bad key
        # is refused in the server's words.
        await page.get_by_text("Add a sub-ticket to the plan").click()
        add = page.get_by_role("form", name="Add a sub-ticket to the plan")
        await add.get_by_role("textbox", name="Key (lower-case letters, digits and _)").fill("Bad-Key")
        await add.get_by_role("textbox", name="Title").fill("Do tests")
        await add.get_by_role("button", name="Add").click()
        await expect(add.get_by_role("alert")).to_contain_text("must be a lower-case name")
        await add.get_by_role("textbox", name="Key (lower-case letters, digits and _)").fill("tests")
        await add.get_by_role("checkbox", name="Do docs").check()
        await add.get_by_role("button", name="Add").click()
        await expect(node(page, "Do tests")).to_contain_text("After: Do docs")
        subs = (await c.call("tickets.get", workspace_id=ws, ticketId=ticket["id"]))["subTickets"]
        assert sorted(x["title"] for x in subs) == ["Do code", "Do docs", "Do tests"]
        await node(page, "Do tests").get_by_role("button", name="Remove Do tests").click()
        await expect(node(page, "Do tests")).to_have_count(0)
        fake.script("solo", text("docs written"), text("code written"), text("Launch deliverable"))
        await node(page, "Do docs").get_by_role("button", name="Approve Do docs").click()
        await node(page, "Do code").get_by_text("Awaiting approval").wait_for(timeout=30_000)
        await expect(node(page, "Do docs")).to_contain_text("Done")
        await node(page, "Do docs").get_by_text("Output of Do docs").click()
        await expect(node(page, "Do docs")).to_contain_text("docs written")
        await shot(page, "orchestration-dag")
        await page.get_by_role("button", name="Approve all").click()
        await page.get_by_text("Launch deliverable").wait_for(timeout=30_000)
        await expect(page.get_by_text("Completed")).to_be_visible()
        await expect(page.get_by_role("button", name="Approve all")).to_have_count(0)
        await expect(page.get_by_role("button", name="Remove Do docs")).to_have_count(0)
        assert console.errors == []

        # A guest sees the DAG and the deliverable, and nothing to approve or start.
        guest = await srv.new_user_token(ws, "guest", name="g")
        for scheme in ("light", "dark"):
            for viewport in (DESKTOP, PHONE):
                other, other_console = await open_signed_in(
                    browser, url, srv.owner_token, viewport=viewport, color_scheme=scheme
                )
                await node(other, "Do code").get_by_text("Done").wait_for()
                await expect(other.locator('[aria-busy="true"]')).to_have_count(0)
                assert await axe_violations(other) == [], f"{scheme} {viewport['width']}"
                assert other_console.errors == []
        seen, _ = await open_signed_in(browser, url, guest, viewport=PHONE)
        await node(seen, "Do code").get_by_text("Done").wait_for()
        await expect(seen.get_by_role("button", name="Approve all")).to_have_count(0)
        assert await axe_violations(seen) == []


async def test_planned_dag_axe_light_and_dark(tmp_path: Path, dist: Path) -> None:
    """The screen with approvals to make (buttons on every node) and the start form: axe on both."""
    async with solo(tmp_path, dist) as (fake, srv, browser, ws, c):
        fresh = await c.call("tickets.create", workspace_id=ws, title="Fresh")
        ticket = await c.call("tickets.create", workspace_id=ws, title="Planned")
        fake.script("solo", plan(("a", []), ("b", ["a"])))
        agent = (await c.call("agents.list", workspace_id=ws))["agents"][0]["id"]
        await c.call("orchestration.start", workspace_id=ws, ticketId=ticket["id"], agentId=agent)
        for scheme in ("light", "dark"):
            for viewport in (DESKTOP, PHONE):
                base = f"{srv.url}/workspaces/{ws}/tickets/"
                page, console = await open_signed_in(
                    browser, base + ticket["id"], srv.owner_token, viewport=viewport, color_scheme=scheme
                )
                await node(page, "Do b").get_by_role("button", name="Approve Do b").wait_for()
                assert await axe_violations(page) == [], f"planned {scheme} {viewport['width']}"
                await page.goto(base + fresh["id"])
                await page.get_by_role("form", name="Orchestrate this ticket").wait_for()
                assert await axe_violations(page) == [], f"start {scheme} {viewport['width']}"
                assert console.errors == []
