"""The pipelines screens end to end: Debian's Chromium, driven by Playwright, against a real server (every part,
the pipelines engine with its shell steps in the real enclosure) serving the real build of ``web/``.

Writing a template in the editor (a problem shown at its line first, then fixed), running it and watching it
complete on the canvas; deciding at a gate that waits for a person's event; cancelling a running run; axe on
each screen, light and dark, and at phone width; no console error anywhere."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from hangar.core.part import Part
from hangar.identity import IdentityService
from hangar.pipelines.part import make_pipelines_part
from hangar.server.parts import all_parts, step_bodies
from tests.support.chromium import CHROMIUM
from tests.support.rpc import RpcClient
from tests.support.server import RunningServer, running_server
from tests.support.webclient import Console, axe_violations, chromium, shot, stored_credential
from tests.unit.agents.fake_openai import call, running_fake_openai, text
from tests.unit.pipelines import bodies_for_tests

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Makefile APT_PACKAGES)")

BROKEN = """id: greet
name: Greet
steps:
  - id: start
    kind: trigger
  - id: hello
    kind: listen
    body: shell.run
    trigger:
      sourceStepIds: [ghost]
    config:
      label: Say hello
      script: printf 'hello %s' {{who}}
      outputKey: greeting
  - id: end
    kind: terminal
    trigger:
      sourceStepIds: [hello]
"""


async def open_signed_in(browser: Any, srv: RunningServer, path: str, **context: Any) -> tuple[Any, Console]:
    token = await srv.ctx.service(IdentityService).issue_device(srv.owner_id, "pipelines-browser")
    page = await (await browser.new_context(storage_state=stored_credential(srv.url, token), **context)).new_page()
    console = Console(page)
    await page.goto(f"{srv.url}{path}")
    return page, console


async def ok_pixels(page: Any) -> int:
    """How many pixels of the run's canvas are drawn in the theme's `--ok` colour (a completed step's)."""
    return int(
        await page.evaluate(
            """() => {
              const c = document.querySelector('canvas[data-testid=pipeline-graph]');
              const probe = document.createElement('span');
              probe.style.color = getComputedStyle(c).getPropertyValue('--ok');
              document.body.append(probe);
              const [r, g, b] = getComputedStyle(probe).color.match(/\\d+/g).map(Number);
              probe.remove();
              const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
              let n = 0;
              for (let i = 0; i < d.length; i += 4) {
                if (d[i + 3] > 200 && Math.abs(d[i] - r) + Math.abs(d[i + 1] - g) + Math.abs(d[i + 2] - b) < 40) n++;
              }
              return n;
            }"""
        )
    )


@pytest.mark.packs("terminal")
async def test_write_a_template_with_an_error_fix_it_and_watch_a_run_complete(tmp_path: Path, dist: Path) -> None:
    async with running_server(tmp_path, web_dist=dist) as srv, chromium() as browser:
        ws = await srv.new_workspace("Pipes")
        page, console = await open_signed_in(browser, srv, f"/workspaces/{ws}/pipelines")
        await page.get_by_role("heading", name="Pipelines", exact=True).wait_for()
        await page.get_by_text("No templates yet").wait_for()
        assert await axe_violations(page) == []

        await page.get_by_role("button", name="New template").click()
        editor = page.get_by_role("textbox", name=re.compile("Template text"))
        await editor.fill(BROKEN)
        problems = page.get_by_role("list", name="Problems")
        problem = problems.get_by_role("listitem").filter(has_text="names unknown step 'ghost'")
        await problem.wait_for()
        line = BROKEN.splitlines().index("      sourceStepIds: [ghost]") + 1
        assert await problem.get_by_role("button").inner_text() == f"Line {line}"
        assert await page.locator(".gutter .bad").all_inner_texts() == [str(line)]
        assert await editor.get_attribute("aria-invalid") == "true"
        create = page.get_by_role("button", name="Create template")
        assert await create.is_disabled()
        assert await axe_violations(page) == []
        await shot(page, "pipelines-editor-problem")
        # The problem's button puts the cursor on its line.
        await problem.get_by_role("button").click()
        selected = await editor.evaluate("t => t.value.slice(t.selectionStart, t.selectionEnd)")
        assert selected == "      sourceStepIds: [ghost]"

        await editor.fill(BROKEN.replace("[ghost]", "[start]"))
        await page.get_by_text("The template is valid.").wait_for()
        assert await page.locator(".gutter .bad").count() == 0
        preview = page.get_by_role("img", name=re.compile("Preview of the pipeline graph"))
        assert "Say hello (hello): listen" in (await preview.get_attribute("aria-label") or "")
        await create.click()
        await page.get_by_role("status").filter(has_text="Saved greet").wait_for()
        await page.get_by_role("list", name="Templates").get_by_text("Greet", exact=True).wait_for()
        async with RpcClient(srv.ws_url, srv.owner_token) as c:
            stored = await c.call("pipelines.templates.get", workspace_id=ws, templateId="greet")
        assert stored["template"]["steps"][1]["trigger"] == {"sourceStepIds": ["start"]}

        await page.get_by_role("button", name="Run Greet").click()
        await page.get_by_role("textbox", name=re.compile("Payload")).fill('{"who": "Ann O\'Neil"}')
        await page.get_by_role("button", name="Start run").click()
        await page.wait_for_url(re.compile(rf"/workspaces/{ws}/pipelines/runs/[^/]+$"))
        run_id = page.url.rsplit("/", 1)[-1]
        graph = page.get_by_role("img", name=re.compile("Pipeline run graph"))
        await graph.wait_for()
        await page.wait_for_function(
            "() => /Say hello \\(hello\\): listen, completed/.test("
            "document.querySelector('canvas[data-testid=pipeline-graph]').getAttribute('aria-label'))",
            timeout=30_000,
        )
        await page.locator(".pl-status").filter(has_text="completed").first.wait_for()
        label = await graph.get_attribute("aria-label") or ""
        assert "start: trigger, completed" in label and "end: terminal, completed" in label
        assert await ok_pixels(page) > 200, "the canvas shows no completed step"
        row = page.get_by_role("row").filter(has_text="Say hello")
        await row.get_by_text("hello Ann O'Neil").wait_for()
        assert await page.get_by_text("3 of 3 steps settled").count() == 1
        # The canvas from the keyboard: Tab and the arrow keys go through the steps in order, Enter opens one.
        first = page.get_by_role("button", name=re.compile(r"^Step start: trigger, completed"))
        await first.focus()
        await page.keyboard.press("Tab")
        focused = "document.activeElement.getAttribute('aria-label')"
        assert (await page.evaluate(focused)).startswith("Step Say hello (hello): listen, completed")
        assert await page.evaluate("getComputedStyle(document.activeElement).outlineStyle") == "solid"
        await page.keyboard.press("ArrowRight")
        assert (await page.evaluate(focused)).startswith("Step end: terminal")
        await page.keyboard.press("Home")
        await page.keyboard.press("ArrowDown")
        await page.keyboard.press("Enter")
        await page.locator("tr.selected").filter(has_text="Say hello").wait_for()
        assert (
            await page.get_by_role("button", name=re.compile("^Step Say hello")).get_attribute("aria-current") == "step"
        )
        assert await axe_violations(page) == []
        await shot(page, "pipelines-run-completed")
        async with RpcClient(srv.ws_url, srv.owner_token) as c:
            run = await c.call("pipelines.runs.get", workspace_id=ws, runId=run_id)
        assert run["status"] == "completed" and run["state"]["greeting"] == "hello Ann O'Neil"

        # The runs list knows it, and the editor opens the stored template again (as YAML).
        await page.get_by_role("link", name="Pipelines").click()
        runs = page.get_by_role("list", name="Runs, newest first")
        await runs.get_by_role("listitem").filter(has_text=run_id[:8]).filter(has_text="completed").wait_for()
        await page.get_by_role("button", name="Edit Greet").click()
        await page.get_by_text("The template is valid.").wait_for()
        assert "sourceStepIds:" in await editor.input_value()
        assert console.errors == []


def parts_with_test_bodies() -> list[Part]:
    """Every part, and the engine's test bodies (``test.waitEvent`` suspends a step until an event)."""
    others = [p for p in all_parts() if p.name != "pipelines"]
    tests = Part(name="test-bodies", bodies=bodies_for_tests.BODIES)
    return [*others, tests, make_pipelines_part(bodies=step_bodies([*others, tests]))]


GATE = {
    "id": "review",
    "name": "Review",
    "steps": [
        {"id": "start", "kind": "trigger"},
        {
            "id": "gate",
            "kind": "listen",
            "body": "test.waitEvent",
            "trigger": {"sourceStepIds": ["start"]},
            "config": {"label": "Sign-off", "outputKey": "approval", "extras": {"eventType": "review.decided"}},
        },
        {"id": "end", "kind": "terminal", "trigger": {"sourceStepIds": ["gate"]}},
    ],
}

QUICK = {
    "id": "quick",
    "name": "Quick",
    "steps": [
        {"id": "start", "kind": "trigger"},
        {"id": "end", "kind": "terminal", "trigger": {"sourceStepIds": ["start"]}},
    ],
}

SLOW = {
    "id": "slow",
    "name": "Slow",
    "steps": [
        {"id": "start", "kind": "trigger"},
        {
            "id": "wait",
            "kind": "listen",
            "body": "shell.run",
            "trigger": {"sourceStepIds": ["start"]},
            "config": {"script": "sleep 300", "label": "Take a while"},
        },
    ],
}


SHAKY = {
    "id": "shaky",
    "name": "Shaky",
    "steps": [
        {"id": "start", "kind": "trigger"},
        {
            "id": "flaky",
            "kind": "listen",
            "body": "test.flaky",
            "trigger": {"sourceStepIds": ["start"]},
            "config": {
                "extras": {"failTimes": 1},
                "retryPolicy": {"maxAttempts": 2, "initialDelayMs": 10},
                "outputKey": "tries",
            },
        },
        {
            "id": "boom",
            "kind": "listen",
            "body": "shell.run",
            "trigger": {"sourceStepIds": ["flaky"]},
            "config": {"script": "echo 'disk on fire' >&2; exit 3"},
        },
    ],
}


@pytest.mark.packs("terminal")
async def test_approve_at_a_gate_and_cancel_a_running_run(tmp_path: Path, dist: Path) -> None:
    async with running_server(tmp_path, parts=parts_with_test_bodies(), web_dist=dist) as srv, chromium() as browser:
        ws = await srv.new_workspace("Gates")
        async with RpcClient(srv.ws_url, srv.owner_token) as c:
            await c.call("pipelines.templates.create", workspace_id=ws, template=GATE)
            await c.call("pipelines.templates.create", workspace_id=ws, template=SLOW)
            await c.call("pipelines.templates.create", workspace_id=ws, template=SHAKY)
            gated = (await c.call("pipelines.runs.start", workspace_id=ws, templateId="review"))["runId"]

        # Dark, at phone width: the gate is usable there too.
        page, console = await open_signed_in(
            browser,
            srv,
            f"/workspaces/{ws}/pipelines/runs/{gated}",
            viewport={"width": 375, "height": 800},
            color_scheme="dark",
        )
        gate = page.get_by_role("group", name=re.compile("Sign-off waits for the event review.decided"))
        await gate.wait_for(timeout=20_000)
        await page.locator(".pl-status").filter(has_text="suspended").first.wait_for()
        assert "Sign-off (gate): listen, suspended" in (
            await page.get_by_role("img", name=re.compile("Pipeline run graph")).get_attribute("aria-label") or ""
        )
        assert await axe_violations(page) == []
        assert await page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0
        await shot(page, "pipelines-gate-phone-dark")
        await gate.get_by_role("textbox", name="Reason (optional)").fill("looks good")
        await gate.get_by_role("button", name="Approve").click()
        await page.wait_for_function(
            "() => /Sign-off \\(gate\\): listen, completed/.test("
            "document.querySelector('canvas[data-testid=pipeline-graph]').getAttribute('aria-label'))",
            timeout=20_000,
        )
        await page.get_by_role("heading", name="Waiting").wait_for(state="detached")
        async with RpcClient(srv.ws_url, srv.owner_token) as c:
            run = await c.call("pipelines.runs.get", workspace_id=ws, runId=gated)
        assert run["status"] == "completed"
        assert run["state"]["approval"] == {
            "decision": "approved",
            "reason": "looks good",
            "runId": gated,
            "stepId": "gate",
        }

        # A running run shows its progress and is cancelled from the monitor.
        async with RpcClient(srv.ws_url, srv.owner_token) as c:
            slow = (await c.call("pipelines.runs.start", workspace_id=ws, templateId="slow"))["runId"]
        await page.goto(f"{srv.url}/workspaces/{ws}/pipelines/runs/{slow}")
        await page.wait_for_function(
            "() => /Take a while \\(wait\\): listen, running/.test("
            "document.querySelector('canvas[data-testid=pipeline-graph]')?.getAttribute('aria-label') ?? '')",
            timeout=20_000,
        )
        assert await page.get_by_role("progressbar").get_attribute("value") == "1"
        assert await axe_violations(page) == []
        await page.get_by_role("button", name="Cancel run").click()
        await page.get_by_text("The run was cancelled.").wait_for()
        await page.wait_for_function(
            "() => /Take a while \\(wait\\): listen, cancelled/.test("
            "document.querySelector('canvas[data-testid=pipeline-graph]')?.getAttribute('aria-label') ?? '')",
            timeout=20_000,
        )
        assert await page.get_by_role("button", name="Cancel run").count() == 0
        async with RpcClient(srv.ws_url, srv.owner_token) as c:
            assert (await c.call("pipelines.runs.get", workspace_id=ws, runId=slow))["status"] == "cancelled"

        # Retries and errors: a step that succeeded on its second attempt, then one that failed for good.
        async with RpcClient(srv.ws_url, srv.owner_token) as c:
            shaky = (await c.call("pipelines.runs.start", workspace_id=ws, templateId="shaky"))["runId"]
        await page.goto(f"{srv.url}/workspaces/{ws}/pipelines/runs/{shaky}")
        await page.wait_for_function(
            "() => /boom: listen, failed/.test("
            "document.querySelector('canvas[data-testid=pipeline-graph]')?.getAttribute('aria-label') ?? '')",
            timeout=20_000,
        )
        label = await page.get_by_role("img", name=re.compile("Pipeline run graph")).get_attribute("aria-label")
        assert "flaky: listen, completed after 2 attempts" in (label or "")
        flaky = page.get_by_role("row").filter(has=page.get_by_role("button", name="flaky"))
        assert (await flaky.get_by_role("cell").nth(1).inner_text()).strip() == "2"
        boom = page.get_by_role("row").filter(has=page.get_by_role("button", name="boom"))
        await boom.get_by_text("disk on fire").wait_for()
        await page.locator(".pl-status").filter(has_text="failed").first.wait_for()
        assert "disk on fire" in await page.get_by_role("alert").first.inner_text()
        assert await axe_violations(page) == []
        assert console.errors == []


def approval_template(approver: str) -> dict[str, Any]:
    return {
        "id": "ship",
        "name": "Ship",
        "steps": [
            {"id": "start", "kind": "trigger"},
            {
                "id": "open",
                "kind": "listen",
                "body": "messaging.createSpace",
                "trigger": {"sourceStepIds": ["start"]},
                "config": {"label": "Open review", "extras": {"conversationTitle": "Ship review"}},
            },
            {
                "id": "gate",
                "kind": "listen",
                "body": "approval.gate",
                "trigger": {"sourceStepIds": ["open"]},
                "config": {"label": "Sign-off", "agentId": approver, "outputKey": "approval"},
            },
            {"id": "end", "kind": "terminal", "trigger": {"sourceStepIds": ["gate"]}},
        ],
    }


async def test_a_person_approves_an_approval_gate_by_telling_its_approver(tmp_path: Path, dist: Path) -> None:
    """The approver (an ``openai`` agent on the scripted model) leaves the decision to a person; the person's
    Approve in the monitor tells it in the gate's space, it submits ``approved``, and the run completes."""
    async with (
        running_fake_openai() as fake,
        running_server(tmp_path, web_dist=dist) as srv,
        chromium() as browser,
    ):
        ws = await srv.new_workspace("Approvals")
        async with RpcClient(srv.ws_url, srv.owner_token) as c:
            adapter = {"type": "openai", "baseUrl": fake.url, "model": "approver", "apiKey": "sk-test"}
            agent = (await c.call("agents.create", workspace_id=ws, name="Approver", adapter=adapter))["id"]
            await c.call("pipelines.templates.create", workspace_id=ws, template=approval_template(agent))
            fake.script(
                "approver",
                text("A person decides this one; tell me their decision."),
                # The approver thinks a while before it submits: the gate (and the monitor's word that the approver
                # was told) stays up until the decision lands, however soon the dispatch is answered.
                call(
                    "submit_output",
                    {"decision": "approved", "reason": "the person approved: ship it"},
                    stall_seconds=3,
                ),
            )
            run_id = (await c.call("pipelines.runs.start", workspace_id=ws, templateId="ship"))["runId"]

        page, console = await open_signed_in(browser, srv, f"/workspaces/{ws}/pipelines/runs/{run_id}")
        gate = page.get_by_role("group", name=re.compile("Sign-off waits for the decision of its approver Approver"))
        await gate.wait_for(timeout=20_000)
        # The approver has answered without deciding: the gate now waits for its decision.
        await page.get_by_text("Waits for event agents.runFinished").wait_for(timeout=20_000)
        space_link = gate.get_by_role("link", name="the gate's space")
        space_href = await space_link.get_attribute("href") or ""
        assert re.fullmatch(rf"/workspaces/{ws}/spaces/[^/]+", space_href), space_href
        space = space_href.rsplit("/", 1)[-1]
        assert await axe_violations(page) == []
        await shot(page, "pipelines-approval-gate")

        await gate.get_by_role("textbox", name="Reason (optional)").fill("ship it")
        await gate.get_by_role("button", name="Approve").click()
        await gate.get_by_role("status").filter(has_text="Told Approver you approved it").wait_for()
        await page.wait_for_function(
            "() => /Sign-off \\(gate\\): listen, completed/.test("
            "document.querySelector('canvas[data-testid=pipeline-graph]').getAttribute('aria-label'))",
            timeout=20_000,
        )
        await page.get_by_role("heading", name="Waiting").wait_for(state="detached")
        await page.locator(".pl-status").filter(has_text="completed").first.wait_for()
        async with RpcClient(srv.ws_url, srv.owner_token) as c:
            run = await c.call("pipelines.runs.get", workspace_id=ws, runId=run_id)
            msgs = (await c.call("messages.list", workspace_id=ws, space_id=space))["messages"]
        assert run["status"] == "completed"
        assert run["state"]["approval"] == {"decision": "approved", "reason": "the person approved: ship it"}
        told = [m for m in msgs if m["author"]["kind"] != "agent" and "I approve this step" in m["content"]]
        assert len(told) == 1 and told[0]["content"].startswith("@Approver I approve this step. Reason: ship it")
        # The approver was dispatched with the person's message and the gate's output contract.
        last = fake.bodies_for("approver")[-1]
        assert "Reason: ship it" in json.dumps(last["messages"])
        assert "submit_output" in {t["function"]["name"] for t in last["tools"]}
        assert console.errors == []


async def test_triggers_of_a_template_and_deleting_it(tmp_path: Path, dist: Path) -> None:
    async with running_server(tmp_path, web_dist=dist) as srv, chromium() as browser:
        ws = await srv.new_workspace("Triggers")
        async with RpcClient(srv.ws_url, srv.owner_token) as c:
            await c.call("pipelines.templates.create", workspace_id=ws, template=QUICK)
        page, console = await open_signed_in(browser, srv, f"/workspaces/{ws}/pipelines")
        await page.get_by_role("button", name="Triggers of Quick").click()
        panel = page.get_by_role("region", name="Triggers of Quick")
        await panel.get_by_text("No triggers yet").wait_for()
        assert await axe_violations(page) == []

        # An event trigger with a payload; it fires when the event is emitted.
        await panel.get_by_role("combobox", name="Kind").select_option("event")
        await panel.get_by_role("textbox", name="Event type").fill("review.requested")
        await panel.get_by_role("textbox", name=re.compile("Payload")).fill('{"who": "Ann"}')
        await panel.get_by_role("button", name="Add trigger").click()
        listed = panel.get_by_role("list", name="Triggers of Quick")
        await listed.get_by_role("listitem").filter(has_text="on event review.requested").wait_for()
        # A schedule: a bad cron is refused with the server's words, then a good one is listed with its next time.
        await panel.get_by_role("combobox", name="Kind").select_option("schedule")
        cron = panel.get_by_role("textbox", name=re.compile("Cron"))
        await cron.fill("every tuesday")
        await panel.get_by_role("button", name="Add trigger").click()
        await panel.get_by_role("alert").filter(has_text="is not a valid cron expression").wait_for()
        await cron.fill("0 9 * * 1-5")
        await panel.get_by_role("button", name="Add trigger").click()
        schedule = listed.get_by_role("listitem").filter(has_text="on schedule 0 9 * * 1-5 (UTC)")
        await schedule.filter(has_text="next").wait_for()
        await schedule.get_by_role("button", name=re.compile("^Pause")).click()
        await schedule.filter(has_text="(paused)").wait_for()
        assert await axe_violations(page) == []
        await shot(page, "pipelines-triggers")
        async with RpcClient(srv.ws_url, srv.owner_token) as c:
            rows = (await c.call("pipelines.triggers.list", workspace_id=ws, templateId="quick"))["triggers"]
            assert {(r["kind"], r["enabled"]) for r in rows} == {("event", True), ("schedule", False)}
            await c.call("pipelines.emit", workspace_id=ws, eventType="review.requested", payload={"pr": 7})
        runs = page.get_by_role("list", name="Runs, newest first")
        await runs.get_by_role("listitem").filter(has_text="event").first.wait_for(timeout=20_000)

        await listed.get_by_role("listitem").filter(has_text="on event").get_by_role("button", name="Remove").click()
        await listed.get_by_role("listitem").filter(has_text="on event").wait_for(state="detached")
        async with RpcClient(srv.ws_url, srv.owner_token) as c:
            rows = (await c.call("pipelines.triggers.list", workspace_id=ws, templateId="quick"))["triggers"]
            assert [r["kind"] for r in rows] == ["schedule"]

        # Deleting asks first; a member is refused by the server and sees why; the owner deletes it.
        member = await srv.new_user_token(ws, "member", name="Uma")
        other = await (await browser.new_context(storage_state=stored_credential(srv.url, member))).new_page()
        other_console = Console(other)
        await other.goto(f"{srv.url}/workspaces/{ws}/pipelines")
        await other.get_by_role("button", name="Delete Quick").click()
        await other.get_by_role("alertdialog").get_by_role("button", name="Delete Quick").click()
        await other.get_by_role("alertdialog").get_by_role("alert").wait_for()
        assert "admin" in await other.get_by_role("alertdialog").get_by_role("alert").inner_text()

        await page.get_by_role("button", name="Delete Quick").click()
        dialog = page.get_by_role("alertdialog", name="Delete the template Quick?")
        await dialog.get_by_role("button", name="Keep it").click()
        await dialog.wait_for(state="detached")
        await page.get_by_role("button", name="Delete Quick").click()
        assert await axe_violations(page) == []
        await dialog.get_by_role("button", name="Delete Quick").click()
        await page.get_by_role("status").filter(has_text="Deleted Quick.").wait_for()
        await page.get_by_text("No templates yet").wait_for()
        async with RpcClient(srv.ws_url, srv.owner_token) as c:
            assert (await c.call("pipelines.templates.list", workspace_id=ws))["templates"] == []
        assert console.errors == [] and other_console.errors == []
