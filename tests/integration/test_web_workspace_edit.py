"""Changing what a workspace holds after it was made, in the web client end to end: Debian's Chromium, driven by
Playwright, against a real server serving the real build. An agent edited (name, instructions, model, product
tools, a replacement key that never reaches the page) and deleted, a team's members, leader and mode edited,
worktrees of a real local git repository checked out, released and swept with the server's refusals shown inline,
the domain events narrowed to a time window, and a message mentioning two agents running both, each reply
streaming in. axe finds no serious or critical violation; no console errors."""

from __future__ import annotations

import asyncio
import re
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import expect

from hangar.agents.service import secret_key
from tests.integration.test_workspace_repos import make_repo
from tests.support.chromium import CHROMIUM
from tests.support.rpc import RpcClient
from tests.support.server import running_server
from tests.support.webclient import axe_violations, chromium, open_signed_in
from tests.unit.agents.fake_openai import running_fake_openai, text
from tests.unit.agents.support import server_parts

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Makefile APT_PACKAGES)")

OLD_KEY = "sk-old-never-shown-0123456789"
NEW_KEY = "sk-new-never-shown-9876543210"


def row(page: Any, list_name: str, has_text: str | re.Pattern[str]) -> Any:
    return page.get_by_role("list", name=list_name).get_by_role("listitem").filter(has_text=has_text)


async def test_agents_and_teams_are_edited_and_deleted(tmp_path: Path, dist: Path) -> None:
    async with running_server(tmp_path, parts=server_parts(), web_dist=dist) as srv, chromium() as browser:
        ws = await srv.new_workspace("Crew")
        async with RpcClient(srv.ws_url, srv.owner_token) as c:
            adapter = {"type": "openai", "baseUrl": "http://127.0.0.1:9/v1", "model": "m1", "apiKey": OLD_KEY}
            ada = await c.call("agents.create", workspace_id=ws, name="Ada", adapter=adapter)
            bob = await c.call(
                "agents.create", workspace_id=ws, name="Bob", adapter={"type": "command", "argv": ["bob-cli"]}
            )
            await c.call("teams.create", workspace_id=ws, name="Pair", memberIds=[ada["id"], bob["id"]])
        page, console = await open_signed_in(browser, f"{srv.url}/workspaces/{ws}/agents", srv.owner_token)
        await row(page, "Agents", "Ada").wait_for()

        # Edit Ada: everything the form shows, and a replacement key.
        await page.get_by_role("button", name="Edit agent Ada").click()
        form = page.get_by_role("form", name="Edit agent Ada")
        assert await form.get_by_role("textbox", name="Model").input_value() == "m1"
        assert await form.get_by_label("Replace the API key").input_value() == ""  # the stored key is never shown
        await form.get_by_text("A key is stored; leave this empty to keep it.").wait_for()
        await form.get_by_role("textbox", name="Name").fill("Ada Lovelace")
        await form.get_by_role("textbox", name="Instructions (system prompt)").fill("Be brief.")
        await form.get_by_role("textbox", name="Model").fill("m2")
        await form.get_by_label("Replace the API key").fill(NEW_KEY)
        await form.get_by_role("checkbox", name=re.compile("^the default set")).uncheck()
        await form.get_by_role("textbox", name=re.compile("^Ops it may call")).fill("tickets.list\nmessages.list")
        assert await axe_violations(page) == []
        await form.get_by_role("button", name="Save agent").click()
        await row(page, "Agents", "Ada Lovelace").get_by_text("openai · m2 at http://127.0.0.1:9/v1").wait_for()
        assert OLD_KEY not in await page.content() and NEW_KEY not in await page.content()
        async with RpcClient(srv.ws_url, srv.owner_token) as c:
            got = await c.call("agents.get", workspace_id=ws, agent_id=ada["id"])
        assert got["name"] == "Ada Lovelace" and got["systemPrompt"] == "Be brief."
        assert got["adapter"]["model"] == "m2" and got["adapter"]["hasApiKey"] is True
        assert got["adapter"]["productTools"] == ["tickets.list", "messages.list"]
        assert srv.ctx.secrets.get(secret_key(ws, ada["id"])) == NEW_KEY

        # Editing again without a key keeps the new one; the server's refusal shows in the form.
        await page.get_by_role("button", name="Edit agent Ada Lovelace").click()
        form = page.get_by_role("form", name="Edit agent Ada Lovelace")
        await form.get_by_role("textbox", name=re.compile("^Ops it may call")).fill("no.such.op")
        await form.get_by_role("button", name="Save agent").click()
        await form.get_by_role("alert").filter(has_text="no op is named 'no.such.op'").wait_for()
        await form.get_by_role("textbox", name=re.compile("^Ops it may call")).fill("tickets.list")
        await form.get_by_role("button", name="Save agent").click()
        await form.wait_for(state="detached")
        assert srv.ctx.secrets.get(secret_key(ws, ada["id"])) == NEW_KEY

        # A command agent's line and how it gets the prompt.
        await page.get_by_role("button", name="Edit agent Bob").click()
        form = page.get_by_role("form", name="Edit agent Bob")
        await form.get_by_role("textbox", name="Command line, one argument per line").fill("bob-cli\n--quiet")
        await form.get_by_role("combobox", name="Prompt given on").select_option("arg")
        await form.get_by_role("button", name="Save agent").click()
        await row(page, "Agents", "Bob").get_by_text("command · bob-cli --quiet").wait_for()

        # Bob is in a team, so the server refuses to delete him; the refusal shows on his row.
        bob_row = row(page, "Agents", "Bob")
        await bob_row.get_by_role("button", name="Delete agent Bob").click()
        await bob_row.get_by_role("button", name="Delete", exact=True).click()
        await bob_row.get_by_role("alert").filter(has_text="is a member of 1 team(s)").wait_for()

        # The team: Bob out, Ada leading, the manager mode.
        await page.get_by_role("button", name="Edit team Pair").click()
        team = page.get_by_role("form", name="Edit team Pair")
        await team.get_by_role("textbox", name="Name").fill("Solo")
        await team.get_by_role("checkbox", name="Bob").uncheck()
        await team.get_by_role("combobox", name="Leader").select_option(label="Ada Lovelace")
        await team.get_by_role("combobox", name="Dispatch mode").select_option("manager")
        await team.get_by_role("button", name="Save team").click()
        solo = row(page, "Teams", "Solo")
        await solo.get_by_text("Ada Lovelace · led by Ada Lovelace").wait_for()
        await solo.get_by_text("The leader, who delegates", exact=True).wait_for()

        # Now Bob goes, after the question.
        await bob_row.get_by_role("button", name="Delete agent Bob").click()
        await bob_row.get_by_role("button", name="Delete", exact=True).click()
        await expect(row(page, "Agents", "Bob")).to_have_count(0)
        async with RpcClient(srv.ws_url, srv.owner_token) as c:
            agents = (await c.call("agents.list", workspace_id=ws))["agents"]
            teams = (await c.call("teams.list", workspace_id=ws))["teams"]
        assert [a["name"] for a in agents] == ["Ada Lovelace"]
        assert [(t["name"], t["memberIds"], t["leaderId"], t["dispatchMode"]) for t in teams] == [
            ("Solo", [ada["id"]], ada["id"], "manager")
        ]

        # And the team goes too.
        await page.get_by_role("button", name="Delete team Solo").click()
        await solo.get_by_role("button", name="Delete", exact=True).click()
        await page.get_by_text("No teams yet.").wait_for()
        assert await axe_violations(page) == []
        assert console.errors == []


async def test_worktrees_are_checked_out_released_and_swept(tmp_path: Path, dist: Path) -> None:
    source = make_repo(tmp_path / "src", "app")
    async with running_server(tmp_path / "data", parts=server_parts(), web_dist=dist) as srv, chromium() as browser:
        ws = await srv.new_workspace("Builders")
        async with RpcClient(srv.ws_url, srv.owner_token) as c:
            build = (await c.call("spaces.create", workspace_id=ws, title="Build"))["id"]
            old = (await c.call("spaces.create", workspace_id=ws, title="Old work"))["id"]
            ticket = (await c.call("tickets.create", workspace_id=ws, title="Fix the login"))["id"]
        page, console = await open_signed_in(browser, f"{srv.url}/workspaces/{ws}/repos", srv.owner_token)

        # Register the repository from its path on the server.
        await page.get_by_text("Register a repository", exact=True).click()
        register = page.get_by_role("form", name="Register repository")
        await register.get_by_role("radio", name="a git repository on the server").check()
        await register.get_by_role("textbox", name="Path on the server").fill(str(source))
        await register.get_by_role("button", name="Register").click()
        await row(page, "Repositories", "app").wait_for()

        # Check out: a branch that does not exist is refused inline, then the real one for the space.
        await page.get_by_text("Check out a worktree", exact=True).click()
        add = page.get_by_role("form", name="New worktree")
        await add.get_by_role("textbox", name="Branch").fill("nope")
        await add.get_by_role("combobox", name="Space").select_option(label="Build")
        await add.get_by_role("button", name="Check out").click()
        await add.get_by_role("alert").filter(has_text="branch 'nope' does not exist").wait_for()
        await add.get_by_role("textbox", name="Branch").fill("feature")
        await add.get_by_role("button", name="Check out").click()
        space_tree = row(page, "Worktrees", f"hangar/space-{build}")
        await space_tree.get_by_text("from feature", exact=False).wait_for()
        assert await add.get_by_role("alert").count() == 0
        # The same repository twice for one space is refused.
        await add.get_by_role("button", name="Check out").click()
        await add.get_by_role("alert").filter(has_text="already checked out").wait_for()
        # For a ticket, and for the space that is then archived.
        await add.get_by_role("radio", name="a ticket").check()
        await add.get_by_role("combobox", name="Ticket").select_option(label="Fix the login")
        await add.get_by_role("textbox", name="Branch").fill("")
        await add.get_by_role("button", name="Check out").click()
        await row(page, "Worktrees", f"hangar/ticket-{ticket}").wait_for()
        await add.get_by_role("radio", name=re.compile("^a space")).check()
        await add.get_by_role("combobox", name="Space").select_option(label="Old work")
        await add.get_by_role("button", name="Check out").click()
        await row(page, "Worktrees", f"hangar/space-{old}").wait_for()
        assert await axe_violations(page) == []

        async with RpcClient(srv.ws_url, srv.owner_token) as c:
            trees = {t["workBranch"]: t for t in (await c.call("worktrees.list", workspace_id=ws))["worktrees"]}
        build_path = Path(trees[f"hangar/space-{build}"]["path"])
        assert (build_path / "feature.txt").exists()  # the feature branch, really checked out

        # Release the space's worktree from its row.
        await space_tree.get_by_role("button", name=re.compile("^Release worktree app")).click()
        await space_tree.get_by_role("button", name="Release", exact=True).click()
        await expect(row(page, "Worktrees", f"hangar/space-{build}")).to_have_count(0)
        assert not build_path.exists()

        # The sweep: the archived space's worktree and a worktree whose folder vanished, shown before they go.
        ticket_path = Path(trees[f"hangar/ticket-{ticket}"]["path"])
        old_path = Path(trees[f"hangar/space-{old}"]["path"])
        async with RpcClient(srv.ws_url, srv.owner_token) as c:
            await c.call("spaces.archive", workspace_id=ws, spaceId=old)
        await asyncio.to_thread(shutil.rmtree, ticket_path)
        await page.get_by_role("button", name="Find what to clean up").click()
        doomed = page.get_by_role("list", name="To be released")
        await doomed.wait_for()
        shown = await doomed.get_by_role("listitem").all_inner_texts()
        assert str(ticket_path) in shown and str(old_path) in shown
        assert (await page.get_by_role("list", name="Worktrees").get_by_role("listitem").count()) == 2  # dry run
        await page.get_by_role("button", name="Clean up these").click()
        await (
            page.get_by_role("group", name=re.compile("^Release these")).get_by_role("button", name="Clean up").click()
        )
        await page.get_by_role("status").filter(has_text="Cleaned up:").wait_for()
        await page.get_by_text("No worktrees are checked out.").wait_for()
        assert not old_path.exists()
        await page.get_by_role("button", name="Find what to clean up").click()
        await page.get_by_text("Nothing to clean up", exact=False).wait_for()
        assert await axe_violations(page) == []
        assert console.errors == []


def local_second(at: datetime) -> str:
    """A ``datetime-local`` value (the page runs in UTC) to the second."""
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S")


async def test_events_narrow_to_a_time_window(tmp_path: Path, dist: Path) -> None:
    async with running_server(tmp_path, parts=server_parts(), web_dist=dist) as srv, chromium() as browser:
        ws = await srv.new_workspace("Timeline")
        async with RpcClient(srv.ws_url, srv.owner_token) as c:
            await c.call("spaces.create", workspace_id=ws, title="Early")
            # The filter goes to the second: the later events come in a later second than the cut.
            await asyncio.sleep(1.1)
            cut = datetime.now(UTC).replace(microsecond=0)
            await c.call("spaces.create", workspace_id=ws, title="Late")
            everything = await c.call("events.list", workspace_id=ws)
        early = [e["seq"] for e in everything if datetime.fromisoformat(e["occurredAt"]) < cut]
        late = [e["seq"] for e in everything if datetime.fromisoformat(e["occurredAt"]) >= cut]
        assert early and late
        page, console = await open_signed_in(
            browser, f"{srv.url}/workspaces/{ws}/audit", srv.owner_token, timezone_id="UTC"
        )
        events = page.get_by_role("list", name="Domain events, newest first")
        items = events.get_by_role("listitem")
        await expect(items).to_have_count(len(everything))
        filters = page.get_by_role("form", name="Filter the domain events")

        async def shown() -> list[int]:
            return sorted(int(s) for s in await items.evaluate_all("els => els.map(e => e.dataset.seq)"))

        # Until the cut: the early events only.
        await filters.get_by_label("Until").fill(local_second(cut))
        await filters.get_by_role("button", name="Apply filter").click()
        await expect(items).to_have_count(len(early))
        assert await shown() == early

        # From the cut: the late ones, and new ones as they happen.
        await filters.get_by_label("Until").fill("")
        await filters.get_by_label("From").fill(local_second(cut))
        await filters.get_by_role("button", name="Apply filter").click()
        await expect(items).to_have_count(len(late))
        assert await shown() == late
        async with RpcClient(srv.ws_url, srv.owner_token) as c:
            await c.call("spaces.create", workspace_id=ws, title="Live")
        # Creating a space publishes as many events as creating "Late" did, all after the cut.
        await expect(items).to_have_count(2 * len(late))
        assert await axe_violations(page) == []

        # A window that ends before it starts is named, not sent.
        await filters.get_by_label("Until").fill(local_second(cut.replace(year=cut.year - 1)))
        await filters.get_by_role("alert").filter(has_text="“Until” must be later than “From”.").wait_for()
        assert await filters.get_by_role("button", name="Apply filter").is_disabled()
        # A window in the future holds nothing yet.
        await filters.get_by_label("Until").fill("")
        await filters.get_by_label("From").fill("2099-01-01T00:00:00")
        await filters.get_by_role("button", name="Apply filter").click()
        await page.get_by_text("No events match; new ones appear here as they happen.").wait_for()
        await filters.get_by_role("button", name="Clear").click()
        await expect(items).to_have_count(len(everything) + len(late))
        assert console.errors == []


async def test_a_message_mentioning_two_agents_runs_both(tmp_path: Path, dist: Path) -> None:
    async with (
        running_fake_openai() as fake,
        running_server(tmp_path, parts=server_parts(), web_dist=dist) as srv,
        chromium() as browser,
    ):
        ws = await srv.new_workspace("Duo")
        async with RpcClient(srv.ws_url, srv.owner_token) as c:
            space = (await c.call("spaces.create", workspace_id=ws, title="Standup"))["id"]
            ids = {}
            for name, model in (("Ada", "m-ada"), ("Bob", "m-bob")):
                adapter = {"type": "openai", "baseUrl": fake.url, "model": model, "apiKey": "sk-duo"}
                ids[name] = (await c.call("agents.create", workspace_id=ws, name=name, adapter=adapter))["id"]
        fake.script("m-ada", text("Ada reporting: all green.", chunk_size=3, delay_between_chunks=0.03))
        fake.script("m-bob", text("Bob reporting: one flaky test.", chunk_size=3, delay_between_chunks=0.03))
        page, console = await open_signed_in(browser, f"{srv.url}/workspaces/{ws}/spaces/{space}", srv.owner_token)
        await page.get_by_text("No messages yet").wait_for()

        box = page.get_by_role("textbox", name="Message")
        await box.fill("@Ada and @Bob, status please")
        await page.get_by_text("Sending runs Ada and Bob on this message.").wait_for()
        await page.get_by_role("button", name="Send to Ada and Bob").click()

        log = page.get_by_role("log", name="Messages")
        await log.get_by_text("@Ada and @Bob, status please").wait_for()
        for name, reply in (("Ada", "Ada reporting: all green."), ("Bob", "Bob reporting: one flaky test.")):
            run = log.get_by_role("region", name=f"Run of {name}")
            await run.wait_for()
            await log.locator('.msg[data-kind="agent"]').get_by_text(reply).wait_for()
            await run.get_by_text("finished after 1 turn").wait_for(timeout=20_000)
        assert await axe_violations(page) == []

        async with RpcClient(srv.ws_url, srv.owner_token) as c:
            runs = (await c.call("runs.list", workspace_id=ws, spaceId=space))["runs"]
            msgs = (await c.call("messages.list", workspace_id=ws, space_id=space))["messages"]
        assert sorted(r["agentId"] for r in runs) == sorted(ids.values())
        assert all(r["outcome"] == "ok" and r["prompt"] == "@Ada and @Bob, status please" for r in runs)
        assert [m["content"] for m in msgs if m["author"]["kind"] == "user"] == ["@Ada and @Bob, status please"]
        assert console.errors == []
