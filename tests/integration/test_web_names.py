"""Names, not ids, and failed runs that keep their error, in the web client end to end: Debian's Chromium, driven
by Playwright, against a real server (every part; command agents in the real enclosure) serving the real build.

- The pipeline editor: an agent typed by name (`agentId: analyst`, which the editor used to accept and the run
  then failed on) is a problem at its line and the template cannot be saved; the agent chosen from the picker puts
  its id in the text, and the pipeline runs it.
- Tickets, the audit log and the activity name people and records (the ids on hover and in a disclosure); roles,
  dispatch modes and event types in words.
- Image packs and engines named for people; a device renamed on the Devices screen.
- A failed agent run shows its error once while live, and the same after a reload; so does the run monitor.

Every screen passes axe (light and dark, desktop and phone width) and logs no console error."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from hangar.identity import IdentityService
from hangar.identity.devices import MAX_DEVICE_NAME
from tests.support import webclient
from tests.support.chromium import CHROMIUM
from tests.support.confined import CLI_AGENT
from tests.support.rpc import RpcClient
from tests.support.runs import assert_completed
from tests.support.server import RunningServer, running_server
from tests.support.webclient import Console, axe_violations, chromium, shot
from tests.unit.agents.support import wait_run

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Makefile APT_PACKAGES)")

COMMAND_AGENT = {"type": "command", "argv": [*CLI_AGENT], "promptVia": "stdin"}
FAILURE = "the command exited with status 3: boom: the tool broke"  # what CLI_AGENT's "fail" ends with
LOOKS = [
    {},
    {"color_scheme": "dark"},
    {"viewport": {"width": 375, "height": 740}},
    {"viewport": {"width": 375, "height": 740}, "color_scheme": "dark"},
]

ASK = """id: ask
name: Ask the analyst
steps:
  - id: start
    kind: trigger
  - id: room
    kind: listen
    body: messaging.createSpace
    trigger:
      sourceStepIds: [start]
  - id: ask
    kind: listen
    body: conversation.promptAgent
    trigger:
      sourceStepIds: [room]
    config:
      label: Ask the analyst
      agentId: analyst
      prompt: echo from the pipeline
  - id: end
    kind: terminal
    trigger:
      sourceStepIds: [ask]
"""


async def open_signed_in(browser: Any, srv: RunningServer, path: str, **context: Any) -> tuple[Any, Console]:
    """``path`` in a new browser context holding a new credential of the server owner's, named names-browser."""
    token = await srv.ctx.service(IdentityService).issue_device(srv.owner_id, "names-browser")
    return await webclient.open_signed_in(browser, f"{srv.url}{path}", token, **context)


async def pipeline_run_ended(client: RpcClient, ws: str, run_id: str) -> dict[str, Any]:
    """The run once it has ended (an agent step suspends its run while the agent works)."""
    for _ in range(60):
        run = await client.call("pipelines.runs.wait", workspace_id=ws, runId=run_id, timeoutSeconds=5)
        if run["status"] in ("completed", "failed", "cancelled"):
            return dict(run)
        await asyncio.sleep(1)
    raise AssertionError(f"pipeline run {run_id} did not end: {run}")


async def axe_in_every_look(browser: Any, srv: RunningServer, path: str, ready: str) -> None:
    """No serious or critical axe violation at ``path``, light and dark, desktop and phone width."""
    for look in LOOKS:
        page, console = await open_signed_in(browser, srv, path, **look)
        await page.get_by_text(ready).first.wait_for()
        assert await axe_violations(page) == [], (path, look)
        assert console.errors == [], (path, look)
        await page.context.close()


@pytest.mark.packs("terminal")
async def test_an_agent_typed_by_name_is_refused_at_its_line_and_one_chosen_from_the_picker_runs(
    tmp_path: Path, dist: Path
) -> None:
    async with running_server(tmp_path, web_dist=dist) as srv, chromium() as browser:
        ws = await srv.new_workspace("Names")
        async with RpcClient(srv.ws_url, srv.owner_token) as c:
            agent = await c.call("agents.create", workspace_id=ws, name="analyst", adapter=COMMAND_AGENT)
        page, console = await open_signed_in(browser, srv, f"/workspaces/{ws}/pipelines")
        await page.get_by_role("button", name="New template").click()
        editor = page.get_by_role("textbox", name=re.compile("Template text"))
        await editor.fill(ASK)

        # The name where an id belongs: a problem at its line, naming the step and the field; nothing to save.
        problem = page.get_by_role("list", name="Problems").get_by_role("listitem")
        await problem.filter(has_text="step ask: config.agentId: no agent with the id 'analyst'").wait_for()
        assert f"the agent named 'analyst' has the id {agent['id']}" in await problem.inner_text()
        line = ASK.splitlines().index("      agentId: analyst") + 1
        assert await problem.get_by_role("button").inner_text() == f"Line {line}"
        assert await page.locator(".gutter .bad").all_inner_texts() == [str(line)]
        create = page.get_by_role("button", name="Create template")
        assert await create.is_disabled()

        # The picker names the step's agent and says the typed one is not in the workspace.
        pickers = page.get_by_role("region", name="Agents, teams, spaces and repositories")
        await pickers.get_by_role("combobox", name="Step").select_option(label="Ask the analyst (ask)")
        choose = pickers.get_by_role("combobox", name="Agent agentId")
        assert await choose.get_attribute("aria-invalid") == "true"
        assert await choose.locator("option:checked").inner_text() == "Not in this workspace: analyst"
        assert await axe_violations(page) == []

        # Chosen by name: its id goes into the text, at that line, and the template is valid.
        await choose.select_option(label="analyst")
        await page.get_by_text("The template is valid.").wait_for()
        await pickers.scroll_into_view_if_needed()
        await shot(page, "pipelines-editor-picker")
        text = await editor.input_value()
        assert text.splitlines()[line - 1] == f"      agentId: {agent['id']}"
        assert await choose.get_attribute("aria-invalid") is None
        # The repos picker of the space-opening step, for the same template.
        await pickers.get_by_role("combobox", name="Step").select_option(label="room")
        await pickers.get_by_role("group", name="Repositories repoIds").get_by_text("no repositories yet").wait_for()
        assert await axe_violations(page) == []
        await create.click()
        await page.get_by_role("status").filter(has_text="Saved ask").wait_for()

        # And it runs: the agent answers in the space the pipeline opened.
        await page.get_by_role("button", name="Run Ask the analyst").click()
        await page.get_by_role("button", name="Start run").click()
        await page.wait_for_url(re.compile(rf"/workspaces/{ws}/pipelines/runs/[^/]+$"))
        run_id = page.url.rsplit("/", 1)[-1]
        async with RpcClient(srv.ws_url, srv.owner_token) as c:
            run = await pipeline_run_ended(c, ws, run_id)
            assert_completed(run)
            await page.get_by_role("status").filter(has_text="Run completed").wait_for()
            (agent_run,) = (await c.call("runs.list", workspace_id=ws, agentId=agent["id"]))["runs"]
            assert agent_run["outcome"] == "ok"
            said = await c.call("messages.list", workspace_id=ws, spaceId=agent_run["spaceId"])
            assert "you said: echo from the pipeline" in said["messages"][-1]["content"]
        assert console.errors == []


async def test_tickets_the_audit_log_and_activity_name_people_and_records(tmp_path: Path, dist: Path) -> None:
    async with running_server(tmp_path, web_dist=dist) as srv, chromium() as browser:
        ws = await srv.new_workspace("Names")
        async with RpcClient(srv.ws_url, srv.owner_token) as c:
            code = (await c.call("members.invite", workspace_id=ws, role="member"))["code"]
        async with httpx.AsyncClient() as http:  # Meg joins as people do: the invite, paired from her device
            paired = await http.post(f"{srv.url}/auth/pair", json={"code": code, "deviceName": "Meg"})
        meg_token = paired.json()["token"]
        async with RpcClient(srv.ws_url, meg_token) as meg:
            meg_id = (await meg.call("users.me"))["id"]
            ticket = await meg.call("tickets.create", workspace_id=ws, title="Fix the door")
        async with RpcClient(srv.ws_url, srv.owner_token) as c:
            agent = await c.call(
                "agents.create", workspace_id=ws, name="analyst", role="chiefExecutive", adapter=COMMAND_AGENT
            )
            gone = await c.call("agents.create", workspace_id=ws, name="retired", adapter=COMMAND_AGENT)
            await c.call("agents.delete", workspace_id=ws, agentId=gone["id"])
            await c.call("teams.create", workspace_id=ws, name="Crew", memberIds=[agent["id"]], dispatchMode="manager")
            await c.call("spaces.create", workspace_id=ws, title="Plans")

        # The ticket: filed by Meg, by name; her id and the ticket's in its Ids.
        page, console = await open_signed_in(browser, srv, f"/workspaces/{ws}/tickets/{ticket['id']}")
        meta = page.locator(".ticket-meta")
        filed = meta.locator(".record-name")
        await meta.get_by_text("Filed by Meg").wait_for()
        assert await filed.get_attribute("title") == f"user:{meg_id}"
        await meta.get_by_text("Ids").click()
        await meta.get_by_text(f"user:{meg_id}", exact=True).wait_for()
        await meta.get_by_text(ticket["id"], exact=True).wait_for()
        assert await axe_violations(page) == []

        # The workspace's sections: roles and modes in words; the overview's activity in words with who and what
        # by name.
        await page.goto(f"{srv.url}/workspaces/{ws}/agents")
        await page.get_by_role("list", name="Agents").get_by_text("Chief executive", exact=True).wait_for()
        await page.get_by_role("list", name="Teams").get_by_text("The leader, who delegates").wait_for()
        assert await axe_violations(page) == []
        await page.goto(f"{srv.url}/workspaces/{ws}/members")
        members = page.get_by_role("list", name="Members")
        await members.locator(".badge").first.wait_for()
        assert sorted(await members.locator(".badge").all_inner_texts()) == ["Member", "Owner"]
        await page.get_by_text("Your role:").get_by_text("Owner").wait_for()
        assert await axe_violations(page) == []
        await page.goto(f"{srv.url}/workspaces/{ws}")
        activity = page.get_by_role("list", name="Recent events, newest first")
        added = activity.get_by_role("listitem").filter(has_text="Member added")
        await added.get_by_text("Meg · Member").wait_for()
        assert await added.locator(".event-label").get_attribute("title") == "identity.memberAdded"
        await added.get_by_text("Details").click()
        await added.get_by_text(f"user:{meg_id}", exact=True).wait_for()
        await activity.get_by_role("listitem").filter(has_text="Ticket changed").get_by_text("Fix the door").wait_for()
        await activity.get_by_text("Workspace created").wait_for()
        # Wire names only in the titles and details, never as what a person reads.
        assert await activity.locator(".event-label").evaluate_all("ls => ls.every(l => !l.textContent.includes('.'))")
        assert await axe_violations(page) == []

        # The audit log: principals and targets by name, a deleted agent by the name its row recorded.
        await page.goto(f"{srv.url}/workspaces/{ws}/audit")
        rows = page.get_by_role("region", name="Audit rows").locator("tbody tr")
        created = rows.filter(has=page.get_by_text("tickets.create", exact=True))
        await created.locator("td").nth(1).get_by_text("Meg", exact=True).wait_for()
        target = created.locator("td").nth(3).locator(".record-name")
        assert await target.inner_text() == "Fix the door"
        assert await target.get_attribute("title") == f"ticket:{ticket['id']}"
        made = rows.filter(has=page.get_by_text("agents.create", exact=True))
        assert sorted(await made.locator("td:nth-child(4) .record-name").all_inner_texts()) == ["analyst", "retired"]
        deleted = rows.filter(has=page.get_by_text("agents.delete", exact=True)).locator("td:nth-child(4) .record-name")
        assert await deleted.inner_text() == "retired"  # by the name its agents.create row recorded
        assert await deleted.get_attribute("title") == f"agent:{gone['id']}"
        await made.first.get_by_text("Ids").click()
        await made.first.get_by_text(re.compile(r"^agent:")).wait_for()
        assert await axe_violations(page) == []
        await shot(page, "audit-names")
        events = page.get_by_role("list", name="Domain events, newest first")
        await events.get_by_text("Space created").first.wait_for()
        space_created = events.get_by_role("listitem").filter(has_text="Space created")
        await space_created.get_by_text("Plans", exact=True).wait_for()
        assert console.errors == []

        for path, ready in (
            (f"/workspaces/{ws}/tickets/{ticket['id']}", "Filed by"),
            (f"/workspaces/{ws}", "Workspace created"),
            (f"/workspaces/{ws}/agents", "Chief executive"),
            (f"/workspaces/{ws}/audit", "tickets.create"),
        ):
            await axe_in_every_look(browser, srv, path, ready)


async def test_packs_and_engines_are_named_and_a_device_is_renamed(tmp_path: Path, dist: Path) -> None:
    async with running_server(tmp_path, web_dist=dist) as srv, chromium() as browser:
        await srv.new_workspace("Images")  # custom images are per workspace the owner administers
        page, console = await open_signed_in(browser, srv, "/settings/server/rigs")
        packs = page.get_by_role("list", name="Image packs")
        await packs.get_by_role("listitem").first.wait_for()
        names = await packs.locator("li > div > strong").all_inner_texts()
        assert names == [
            "Terminal image",
            "Chromium browser image",
            "Firefox browser image",
            "WebKit browser image",
            "Desktop image",
        ]
        assert all(len(n) < 30 for n in names)
        await page.get_by_label("Browser image (Chromium)").first.wait_for()
        assert await axe_violations(page) == []

        # Devices: this browser's credential renamed; a name over the limit is refused here as the server would.
        await page.goto(f"{srv.url}/settings/devices")
        devices = page.get_by_role("list", name="Signed-in devices")
        mine = devices.get_by_role("listitem").filter(has_text="this browser")
        await mine.get_by_role("button", name="Rename names-browser").click()
        form = page.get_by_role("form", name="Rename names-browser")
        name = form.get_by_role("textbox", name="New name")
        save = form.get_by_role("button", name="Save name")
        await name.fill("x" * (MAX_DEVICE_NAME + 1))
        await form.get_by_role("alert").filter(has_text="at most 100 characters; this one has 101").wait_for()
        assert await save.is_disabled() and await name.get_attribute("aria-invalid") == "true"
        await name.fill("x" * MAX_DEVICE_NAME)
        assert await save.is_enabled()
        assert await axe_violations(page) == []
        await name.fill("Work laptop")
        await shot(page, "devices-rename")
        await name.fill("  Work laptop  ")
        await save.click()
        await page.get_by_role("status").filter(has_text="Renamed to Work laptop.").wait_for()
        await devices.get_by_role("listitem").filter(has_text="this browser").get_by_text("Work laptop").wait_for()
        async with RpcClient(srv.ws_url, srv.owner_token) as c:
            assert "Work laptop" in [d["name"] for d in await c.call("devices.list")]
        assert await axe_violations(page) == []
        assert console.errors == []
        await axe_in_every_look(browser, srv, "/settings/server/rigs", "Chromium browser image")
        await axe_in_every_look(browser, srv, "/settings/devices", "this browser")


def error_count(text: str) -> str:
    return f"() => (document.body.innerText.match(/{re.escape(text)}/g) || []).length"


@pytest.mark.packs("terminal")
async def test_a_failed_agent_run_shows_its_error_once_live_and_the_same_after_a_reload(
    tmp_path: Path, dist: Path
) -> None:
    async with running_server(tmp_path, web_dist=dist) as srv, chromium() as browser:
        ws = await srv.new_workspace("Names")
        async with RpcClient(srv.ws_url, srv.owner_token) as c:
            space = await c.call("spaces.create", workspace_id=ws, title="Failures")
            agent = await c.call("agents.create", workspace_id=ws, name="Cli", adapter=COMMAND_AGENT)
            page, console = await open_signed_in(browser, srv, f"/workspaces/{ws}/spaces/{space['id']}")
            await page.get_by_role("heading", name="Failures").wait_for()
            started = await c.call(
                "agents.run", workspace_id=ws, agent_id=agent["id"], space_id=space["id"], prompt="fail"
            )
            run = await wait_run(c, ws, started["runId"], timeout=180)
        assert run["error"] == FAILURE

        block = page.locator(f"[data-run='{started['runId']}']")
        await block.get_by_text("failed after 1 turn").wait_for(timeout=60_000)
        await block.get_by_text(FAILURE).wait_for()
        assert await page.evaluate(error_count(FAILURE)) == 1, "live"
        assert await axe_violations(page) == []

        # After a reload the run still says it failed, and why, once.
        await page.reload()
        block = page.locator(f"[data-run='{started['runId']}']")
        await block.get_by_text("failed after 1 turn").wait_for()
        await block.get_by_text(FAILURE).wait_for()
        assert await page.evaluate(error_count(FAILURE)) == 1, "after a reload"
        await block.get_by_role("button", name="Show the agent's steps").click()
        await block.get_by_role("button", name="Show the agent's steps").wait_for(state="detached")
        assert await page.evaluate(error_count(FAILURE)) == 1, "with its steps shown"
        assert await axe_violations(page) == []
        assert console.errors == []

        # The run monitor: a pipeline whose agent step fails says so the same way live and after a reload.
        failing = ASK.replace("agentId: analyst", f"agentId: {agent['id']}").replace("echo from the pipeline", "fail")
        async with RpcClient(srv.ws_url, srv.owner_token) as c:
            await c.call("pipelines.templates.create", workspace_id=ws, template=yaml.safe_load(failing))
            pipeline_run = (await c.call("pipelines.runs.start", workspace_id=ws, templateId="ask"))["runId"]
        monitor, console = await open_signed_in(browser, srv, f"/workspaces/{ws}/pipelines/runs/{pipeline_run}")
        async with RpcClient(srv.ws_url, srv.owner_token) as c:
            ended = await pipeline_run_ended(c, ws, pipeline_run)
        assert ended["status"] == "failed", ended
        await monitor.get_by_role("status").filter(has_text="Run failed").wait_for()
        await monitor.get_by_role("row").filter(has_text="Ask the analyst").get_by_text(FAILURE).wait_for()
        # The run names its agent, not the agent run's id (which the step's details keep).
        row = monitor.get_by_role("row").filter(has_text="Ask the analyst")
        await row.get_by_text(f"the run of agent 'Cli' ended failed: {FAILURE}").wait_for()
        # The run's summary (which step failed) and the step's own row: the summary may render a moment later.
        await monitor.wait_for_function(f"({error_count(FAILURE)})() >= 2")
        live = await monitor.evaluate(error_count(FAILURE))
        assert live == 2
        await monitor.reload()
        await monitor.get_by_role("row").filter(has_text="Ask the analyst").get_by_text(FAILURE).wait_for()
        assert await monitor.evaluate(error_count(FAILURE)) == live
        assert await axe_violations(monitor) == []
        assert console.errors == []
