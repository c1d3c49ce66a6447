"""The workspace screens of the web client end to end: Debian's Chromium, driven by Playwright, against a real server
serving the real build. Creating a workspace, its spaces (rename, archive, hidden ones), tickets with sub-tickets
on the board and on a ticket's page, an agent and a team, an invite whose code really joins someone, roles (with the
server's last-owner refusal shown), a read-only guardrail refusing a change in the UI, and the audit log and events
with their filters. Every screen passes axe, reloads at its deep link, and logs no console error."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import expect

from hangar.agents.part import AGENTS_PART
from hangar.identity.part import IDENTITY_PART
from hangar.oversight import OVERSIGHT_PART
from hangar.sso.part import SSO_PART
from hangar.workspace.part import WORKSPACE_PART
from tests.support.chromium import CHROMIUM
from tests.support.rpc import RpcClient
from tests.support.server import RunningServer, running_server
from tests.support.webclient import Console, axe_violations, chromium, connect_with_code, shot

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Makefile APT_PACKAGES)")

# The SSO part answers the connect screen's /auth/providers.
PARTS = [OVERSIGHT_PART, IDENTITY_PART, SSO_PART, WORKSPACE_PART, AGENTS_PART]
SECRET_KEY = "sk-test-never-shown-0123456789"


async def no_violations(page: Any, where: str) -> None:
    assert await axe_violations(page) == [], where


async def open_section(page: Any, name: str) -> None:
    """Follow the workspace navigation's link to a section; its link then says it is the current page."""
    link = page.get_by_role("navigation", name="Workspace").get_by_role("link", name=name, exact=True)
    await link.click()
    await expect(link).to_have_attribute("aria-current", "page")


async def reload_lands_again(page: Any, heading: str) -> None:
    """A deep link: the same screen comes back after a full reload."""
    url = page.url
    await page.reload()
    await page.get_by_role("heading", name=heading, exact=True).wait_for()
    assert page.url == url


async def audit_actions(page: Any) -> list[str]:
    table = page.get_by_role("region", name="Audit rows")
    return [t.strip() for t in await table.locator("tbody tr td:nth-child(3)").all_inner_texts()]


async def test_workspace_screens_end_to_end(tmp_path: Path, dist: Path) -> None:
    async with running_server(tmp_path, parts=PARTS, web_dist=dist) as srv, chromium() as browser:
        page = await (await browser.new_context()).new_page()
        console = Console(page)
        await page.goto(srv.url + "/")
        await connect_with_code(page, srv)

        # A workspace, created from the home list, opens at its own path.
        await page.get_by_role("heading", name="Workspaces").wait_for()
        await page.get_by_role("textbox", name="Name", exact=True).fill("Orbit")
        await page.get_by_role("button", name="Create workspace").click()
        await page.get_by_role("heading", name="Orbit", exact=True).wait_for()
        match = re.fullmatch(re.escape(srv.url) + r"/workspaces/([^/]+)", page.url)
        assert match, page.url
        ws = match.group(1)
        await no_violations(page, "workspace home, empty")

        await open_section(page, "Spaces")
        assert page.url == f"{srv.url}/workspaces/{ws}/spaces"
        await spaces(page)
        await tickets(page, srv, ws)
        await agents_and_teams(page, srv, ws)
        dana = await invite(page, srv, ws)
        await settings(page, srv, ws, dana)
        await read_only_refuses(page)
        await audit(page, srv, ws)
        assert console.errors == []


async def spaces(page: Any) -> None:
    new = page.get_by_role("form", name="New space")
    await new.get_by_role("textbox", name="Title").fill("Release prep")
    await new.get_by_role("combobox", name="Mode").select_option("plan")
    await new.get_by_role("button", name="Create space").click()
    listed = page.get_by_role("list", name="Spaces")
    await listed.get_by_role("link", name="Release prep").wait_for()
    row = listed.get_by_role("listitem").filter(has_text="Release prep")
    assert "Plan" in await row.inner_text() and "Conversation" in await row.inner_text()

    # A hidden space stays out of the list until asked for.
    await new.get_by_role("textbox", name="Title").fill("Pipeline scratch")
    await new.get_by_role("checkbox", name="Hidden").check()
    await new.get_by_role("button", name="Create space").click()
    await expect(new.get_by_role("textbox", name="Title")).to_have_value("")
    assert await listed.get_by_role("link", name="Pipeline scratch").count() == 0
    await page.get_by_role("checkbox", name="Show hidden spaces").check()
    await listed.get_by_role("link", name="Pipeline scratch").wait_for()
    await page.get_by_role("checkbox", name="Show hidden spaces").uncheck()
    await listed.get_by_role("link", name="Pipeline scratch").wait_for(state="detached")

    await page.get_by_role("button", name="Rename Release prep").click()
    rename = page.get_by_role("form", name="Rename Release prep")
    await rename.get_by_role("textbox", name="New title").fill("Release 1.2")
    await rename.get_by_role("button", name="Save").click()
    await listed.get_by_role("link", name="Release 1.2").wait_for()

    await page.get_by_role("button", name="Archive Release 1.2").click()
    await (
        page.get_by_role("group", name=re.compile("Archive “Release 1.2”"))
        .get_by_role("button", name="Archive", exact=True)
        .click()
    )
    await listed.get_by_role("link", name="Release 1.2").wait_for(state="detached")
    await page.get_by_role("checkbox", name="Show archived spaces").check()
    archived = listed.get_by_role("listitem").filter(has_text="Release 1.2")
    await archived.get_by_text("archived", exact=True).wait_for()
    await no_violations(page, "workspace home with spaces")


async def tickets(page: Any, srv: RunningServer, ws: str) -> None:
    await open_section(page, "Tickets")
    await page.get_by_text("File a ticket", exact=True).click()
    form = page.get_by_role("form", name="File ticket")
    await form.get_by_role("textbox", name="Title").fill("Ship 1.2")
    await form.get_by_role("textbox", name="Description").fill("Everything for the release.")
    await form.get_by_role("button", name="File ticket").click()
    open_column = page.locator('[data-status="open"]')
    await open_column.get_by_role("link", name="Ship 1.2").wait_for()

    await form.get_by_role("textbox", name="Title").fill("Write notes")
    await form.get_by_role("combobox", name="Sub-ticket of").select_option(label="Ship 1.2")
    await form.get_by_role("button", name="File ticket").click()
    subs = page.get_by_role("list", name="Sub-tickets of Ship 1.2")
    await subs.get_by_role("link", name="Write notes").wait_for()
    assert "Open" in await subs.inner_text()

    await page.get_by_role("combobox", name="Status of Ship 1.2").select_option("inProgress")
    moved = page.locator('[data-status="inProgress"]')
    await moved.get_by_role("link", name="Ship 1.2").wait_for()
    assert await open_column.get_by_role("link", name="Ship 1.2").count() == 0
    await no_violations(page, "tickets board")

    # The ticket's own page, at its deep link, with its sub-tickets; a sub-ticket filed there.
    await moved.get_by_role("link", name="Ship 1.2").click()
    await page.get_by_role("heading", name="Ship 1.2", exact=True).wait_for()
    assert re.fullmatch(re.escape(f"{srv.url}/workspaces/{ws}/tickets/") + r"[^/]+", page.url), page.url
    await reload_lands_again(page, "Ship 1.2")
    await page.locator("p.prewrap", has_text="Everything for the release.").wait_for()
    add = page.get_by_role("form", name="Add sub-ticket")
    await add.get_by_role("textbox", name="Title").fill("Tag the release")
    await add.get_by_role("button", name="Add sub-ticket").click()
    listed = page.get_by_role("list", name="Sub-tickets", exact=True)
    await listed.get_by_role("link", name="Tag the release").wait_for()
    assert await listed.get_by_role("link", name="Write notes").count() == 1
    await no_violations(page, "ticket page")
    await listed.get_by_role("link", name="Write notes").click()
    await page.get_by_role("heading", name="Write notes", exact=True).wait_for()
    await page.get_by_role("link", name="Ship 1.2").wait_for()  # its parent
    await page.get_by_role("link", name="Orbit").click()
    await page.get_by_role("heading", name="Orbit", exact=True).wait_for()
    await open_section(page, "Tickets")
    on_board = page.get_by_role("list", name="Sub-tickets of Ship 1.2")
    await on_board.get_by_role("link", name="Tag the release").wait_for()


async def agents_and_teams(page: Any, srv: RunningServer, ws: str) -> None:
    await open_section(page, "Agents and teams")
    await page.get_by_text("Create an agent", exact=True).click()
    form = page.get_by_role("form", name="New agent")
    await form.get_by_role("textbox", name="Name").fill("Scout")
    await form.get_by_role("textbox", name="Base URL").fill("http://127.0.0.1:9/v1")
    await form.get_by_role("textbox", name="Model").fill("small-model")
    await form.get_by_label("API key").fill(SECRET_KEY)
    await form.get_by_role("button", name="Create agent").click()
    row = page.get_by_role("list", name="Agents").get_by_role("listitem").filter(has_text="Scout")
    await row.get_by_text("key stored", exact=False).wait_for()
    assert await form.get_by_label("API key").input_value() == ""
    assert SECRET_KEY not in await page.content()

    await form.get_by_role("radio", name=re.compile("^command")).check()
    await form.get_by_role("textbox", name="Name").fill("Runner")
    await form.get_by_role("textbox", name="Command line, one argument per line").fill("python3\n-m\nmy_agent")
    await form.get_by_role("button", name="Create agent").click()
    runner = page.get_by_role("list", name="Agents").get_by_role("listitem").filter(has_text="Runner")
    await runner.get_by_text("command · python3 -m my_agent").wait_for()
    async with RpcClient(srv.ws_url, srv.owner_token) as c:
        made = {a["name"]: a for a in (await c.call("agents.list", workspace_id=ws))["agents"]}
    assert made["Runner"]["adapter"]["argv"] == ["python3", "-m", "my_agent"]
    assert made["Scout"]["adapter"]["hasApiKey"] is True

    await page.get_by_text("Create a team", exact=True).click()
    team = page.get_by_role("form", name="New team")
    await team.get_by_role("textbox", name="Name").fill("Crew")
    await team.get_by_role("checkbox", name="Scout").check()
    await team.get_by_role("checkbox", name="Runner").check()
    await team.get_by_role("combobox", name="Leader").select_option(label="Scout")
    await team.get_by_role("button", name="Create team").click()
    crew = page.get_by_role("list", name="Teams").get_by_role("listitem").filter(has_text="Crew")
    await crew.get_by_text("led by Scout", exact=False).wait_for()
    await no_violations(page, "agents and teams")
    await shot(page, "workspace-agents")

    # The overview counts what each section holds, with a link to it.
    await open_section(page, "Overview")
    sections = page.get_by_role("list", name="Sections of this workspace")
    await sections.get_by_role("listitem").filter(has_text="2 agents, 1 team").wait_for()
    await sections.get_by_role("listitem").filter(has_text="3 tickets, 3 unfinished").wait_for()
    await page.get_by_role("list", name="Recent events, newest first").wait_for()
    await no_violations(page, "overview")
    await shot(page, "workspace-home")


async def invite(page: Any, srv: RunningServer, ws: str) -> str:
    """An invite made in the browser shows its code once; the code really joins a person, who then appears."""
    await open_section(page, "Members")
    form = page.get_by_role("form", name="Invite someone")
    await form.get_by_role("combobox", name="Role of the invited person").select_option("member")
    await form.get_by_role("button", name="Create invite code").click()
    shown = page.get_by_role("status").filter(has_text="Invite code")
    await shown.wait_for()
    assert "shown only this once" in await shown.inner_text()
    code = (await shown.locator("code").inner_text()).strip()
    async with httpx.AsyncClient() as http:
        r = await http.post(f"{srv.url}/auth/pair", json={"code": code, "deviceName": "Dana"})
    assert r.status_code == 200, r.text
    # The member list follows the workspace's events: Dana appears without a reload.
    await page.get_by_role("list", name="Members").get_by_text("Dana").wait_for()
    await no_violations(page, "members and invite code")
    return str(r.json()["userId"])


async def settings(page: Any, srv: RunningServer, ws: str, dana: str) -> None:
    await page.get_by_role("navigation", name="Workspace").get_by_role("link", name="Settings").click()
    await page.get_by_role("heading", name="Settings of Orbit").wait_for()
    assert page.url == f"{srv.url}/settings/workspaces/{ws}"
    await reload_lands_again(page, "Settings of Orbit")

    await page.get_by_role("combobox", name="Role of Dana").select_option("admin")
    async with RpcClient(srv.ws_url, srv.owner_token) as c:
        me = await c.call("users.me")
        for _ in range(50):
            roles = {m["userId"]: m["role"] for m in await c.call("members.list", workspace_id=ws)}
            if roles[dana] == "admin":
                break
            await page.wait_for_timeout(100)
    assert roles[dana] == "admin"

    # The last owner cannot step down: the server's words are shown, and the picker stays at owner.
    mine = page.get_by_role("combobox", name=f"Role of {me['displayName']}")
    await mine.select_option("member")
    alert = page.get_by_role("alert").filter(has_text="last owner")
    await alert.wait_for()
    assert await alert.inner_text() == "the workspace's last owner cannot be demoted or removed"
    assert await mine.input_value() == "owner"

    await page.get_by_role("heading", name="Chat bridge").wait_for()
    # This server runs without the chat part: the section says so instead of offering a dialog that cannot work
    # (the settings themselves are tested in test_web_chat.py).
    await page.locator("#chat-bridge").get_by_text("runs without the chat bridge").wait_for()
    assert await page.locator("#chat-bridge").locator("button, input, select").count() == 0
    await no_violations(page, "workspace settings")

    # Read-only mode for the whole workspace.
    policy = page.get_by_role("form", name="Guardrails of this workspace")
    await policy.get_by_role("checkbox", name="Read-only mode").check()
    await policy.get_by_role("button", name="Save guardrails of this workspace").click()
    await policy.get_by_role("status").filter(has_text="Saved.").wait_for()
    async with RpcClient(srv.ws_url, srv.owner_token) as c:
        assert (await c.call("guardrails.get", workspace_id=ws))["readOnly"] is True


async def read_only_refuses(page: Any) -> None:
    await page.get_by_role("link", name="Workspace home").click()
    await page.get_by_role("heading", name="Orbit", exact=True).wait_for()
    await open_section(page, "Spaces")
    new = page.get_by_role("form", name="New space")
    await new.get_by_role("textbox", name="Title").fill("Not now")
    await new.get_by_role("button", name="Create space").click()
    refusal = new.get_by_role("alert")
    await refusal.wait_for()
    rule = "spaces.create refused: this workspace is in read-only mode, which denies changes"
    assert await refusal.inner_text() == rule


async def audit(page: Any, srv: RunningServer, ws: str) -> None:
    await page.get_by_role("navigation", name="Workspace").get_by_role("link", name="Audit log and events").click()
    await page.get_by_role("heading", name="Audit log and events").wait_for()
    assert page.url == f"{srv.url}/workspaces/{ws}/audit"
    await reload_lands_again(page, "Audit log and events")
    await page.get_by_role("region", name="Audit rows").wait_for()
    actions = await audit_actions(page)
    # Newest first: the guardrail, the role change, the invite ... back to the workspace's creation.
    assert actions[0] == "guardrails.set"
    assert actions[-1] == "workspaces.create"
    for done in ("spaces.create", "spaces.rename", "spaces.archive", "tickets.create", "tickets.update"):
        assert done in actions
    for done in ("agents.create", "teams.create", "members.invite", "members.setRole"):
        assert done in actions
    assert "spaces.create" not in actions[:1]  # the refused one wrote nothing
    await no_violations(page, "audit log")

    filters = page.get_by_role("form", name="Filter the audit log")
    await filters.get_by_role("textbox", name="Action").fill("spaces.rename")
    await filters.get_by_role("button", name="Apply filters").click()
    await expect(page.get_by_role("region", name="Audit rows").locator("tbody tr")).to_have_count(1)
    assert await audit_actions(page) == ["spaces.rename"]

    # By principal: Dana did nothing; by door: nothing came through MCP.
    await filters.get_by_role("textbox", name="Action").fill("")
    await filters.get_by_role("combobox", name="Principal").select_option(label="Dana")
    await filters.get_by_role("button", name="Apply filters").click()
    await page.get_by_text("No audit rows match.").wait_for()
    await filters.get_by_role("button", name="Clear").click()
    await filters.get_by_role("combobox", name="Door").select_option("mcp")
    await filters.get_by_role("button", name="Apply filters").click()
    await page.get_by_text("No audit rows match.").wait_for()
    await filters.get_by_role("combobox", name="Door").select_option("socket")
    await filters.get_by_role("button", name="Apply filters").click()
    await expect(page.get_by_role("region", name="Audit rows").locator("tbody tr")).to_have_count(len(actions))
    # A time window in the future holds nothing.
    await filters.get_by_role("combobox", name="Door").select_option("")
    await filters.get_by_label("From").fill("2099-01-01T00:00")
    await filters.get_by_role("button", name="Apply filters").click()
    await page.get_by_text("No audit rows match.").wait_for()

    # The domain events, filtered by type.
    events = page.get_by_role("list", name="Domain events, newest first")
    await events.wait_for()
    types = page.get_by_role("form", name="Filter the domain events")
    await types.get_by_role("textbox", name="Event types (comma-separated)").fill("workspace.spaceCreated")
    await types.get_by_role("button", name="Apply filter").click()
    await expect(events.get_by_role("listitem")).to_have_count(2)
    # In words, the wire name on hover and in each event's details.
    assert await events.locator(".event-label").all_inner_texts() == ["Space created"] * 2
    assert await events.locator(".event-label").first.get_attribute("title") == "workspace.spaceCreated"
    types_shown = await events.locator("li[data-type]").evaluate_all("els => els.map(e => e.dataset.type)")
    assert types_shown == ["workspace.spaceCreated"] * 2
    await no_violations(page, "domain events")


async def test_workspace_screens_at_phone_width_in_the_dark(tmp_path: Path, dist: Path) -> None:
    async with running_server(tmp_path, parts=PARTS, web_dist=dist) as srv, chromium() as browser:
        ws = await srv.new_workspace("Narrow")
        async with RpcClient(srv.ws_url, srv.owner_token) as c:
            await c.call("spaces.create", workspace_id=ws, title="A space with a rather long title to wrap")
            parent = await c.call("tickets.create", workspace_id=ws, title="Parent ticket")
            await c.call("tickets.create", workspace_id=ws, title="Child", parentId=parent["id"])
        context = await browser.new_context(viewport={"width": 375, "height": 740}, color_scheme="dark")
        page = await context.new_page()
        console = Console(page)
        await page.goto(f"{srv.url}/workspaces/{ws}")
        await connect_with_code(page, srv)
        for path, heading in (
            (f"/workspaces/{ws}", "Narrow"),
            (f"/workspaces/{ws}/spaces", "Narrow"),
            (f"/workspaces/{ws}/tickets", "Narrow"),
            (f"/workspaces/{ws}/agents", "Narrow"),
            (f"/workspaces/{ws}/repos", "Narrow"),
            (f"/workspaces/{ws}/members", "Narrow"),
            (f"/workspaces/{ws}/tickets/{parent['id']}", "Parent ticket"),
            (f"/settings/workspaces/{ws}", "Settings of Narrow"),
            (f"/workspaces/{ws}/audit", "Audit log and events"),
        ):
            await page.goto(srv.url + path)
            await page.get_by_role("heading", name=heading, exact=True).wait_for()
            await expect(page.locator('[aria-busy="true"]')).to_have_count(0)
            overflow = await page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
            assert overflow <= 0, f"{path} scrolls sideways at phone width"
            await no_violations(page, path)
        assert console.errors == []
