"""Waits in the web client: a command agent's first run while the terminal image builds shows the build's step and
progress in its space, the Rigs settings show the same build without being asked, and a terminal opened meanwhile
shows its boot's progress in its tab; then the run answers, the terminal connects and the pack is ready. Debian's
Chromium against the real server, an empty packs directory and the stand-in builder (its pack: hard links to the
tests' real one). axe finds nothing serious, light and dark, desktop and phone width; the console stays clean."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.async_api import expect

from tests.integration.test_rigs_packs import TERMINAL
from tests.integration.test_waits_visible import STEP, agent_run, first_start
from tests.support.chromium import CHROMIUM
from tests.support.confined import CLI_AGENT
from tests.support.webclient import axe_violations, built_web_client, chromium, open_signed_in, shot

pytestmark = [
    pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Makefile APT_PACKAGES)"),
    pytest.mark.packs("terminal"),
]

PHONE_DARK = {"viewport": {"width": 375, "height": 800}, "color_scheme": "dark"}
HELLO = {
    "id": "hello",
    "steps": [
        {"id": "start", "kind": "trigger"},
        {
            "id": "say", "kind": "listen", "body": "shell.run", "trigger": {"sourceStepIds": ["start"]},
            "config": {"script": "echo hello", "outputKey": "said"},
        },
    ],
}  # fmt: skip


async def test_a_first_run_and_a_first_terminal_show_the_image_build_where_people_look(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dist = built_web_client()
    async with first_start(tmp_path, monkeypatch, web_dist=dist) as w, chromium() as browser:
        token = w.srv.owner_token
        adapter = {"type": "command", "argv": [*CLI_AGENT]}
        await w.client.call("agents.create", workspace_id=w.ws, name="Cli", adapter=adapter)  # named in the space
        space_url = f"{w.srv.url}/workspaces/{w.ws}/spaces/{w.space}"
        settings, settings_console = await open_signed_in(browser, f"{w.srv.url}/settings/server/rigs", token)
        packs = settings.get_by_role("list", name="Image packs")
        await packs.get_by_text("not built").first.wait_for()
        space, console = await open_signed_in(browser, space_url, token)
        phone, phone_console = await open_signed_in(browser, space_url, token, **PHONE_DARK)
        for page in (space, phone):
            await page.get_by_role("heading", name="first hour").wait_for()

        run_id = await agent_run(w)
        for page in (space, phone):
            run = page.locator(f'[data-run="{run_id}"]')
            await expect(run.get_by_role("status")).to_have_text(f"Waiting: {STEP}", timeout=60_000)
            bar = run.get_by_role("progressbar", name="Waiting before the agent's program starts")
            assert (await bar.get_attribute("value"), await bar.get_attribute("max")) == ("4", "10")
            await expect(run.locator(".run-status")).to_have_text("waiting (turn 1)")
            assert await axe_violations(page) == []
        await shot(space, "space-run-waiting")

        # The settings screen shows the build the run started, its step and progress, without a click.
        building = settings.get_by_role("progressbar", name=f"Building {TERMINAL}")
        await building.wait_for()
        await expect(packs.get_by_role("status")).to_have_text(STEP)
        assert (await building.get_attribute("value"), await building.get_attribute("max")) == ("4", "10")
        assert await axe_violations(settings) == []

        # A pipeline run started meanwhile: its shell step's row says what it waits for.
        await w.client.call("pipelines.templates.create", workspace_id=w.ws, template=HELLO)
        pipeline_run = (await w.client.call("pipelines.runs.start", workspace_id=w.ws, templateId="hello"))["runId"]
        run_url = f"{w.srv.url}/workspaces/{w.ws}/pipelines/runs/{pipeline_run}"
        monitors = [
            await open_signed_in(browser, run_url, token),
            await open_signed_in(browser, run_url, token, **PHONE_DARK),
        ]
        for monitor, _ in monitors:
            said = monitor.get_by_role("status").filter(has_text="Waiting:")
            await expect(said).to_have_text(f"Waiting: {STEP}", timeout=60_000)
            bar = said.get_by_role("progressbar", name="Waiting before the script starts")
            assert (await bar.get_attribute("value"), await bar.get_attribute("max")) == ("4", "10")
            assert await axe_violations(monitor) == []

        # A terminal opened meanwhile: its tab shows the boot waiting for the same build.
        await space.get_by_role("button", name="Open a terminal").click()
        state = space.locator(".rig-state")
        await expect(state).to_contain_text(f"provisioning — {STEP}", timeout=60_000)
        starting = space.get_by_role("progressbar", name="Starting the rig")
        assert (await starting.get_attribute("value"), await starting.get_attribute("max")) == ("4", "10")
        assert await axe_violations(space) == []

        w.fake.finish()
        await space.get_by_role("status").filter(has_text="Terminal connected").wait_for(timeout=120_000)
        # The run followed live ends like any other; reloaded, its space shows its answer and no wait.
        run = phone.locator(f'[data-run="{run_id}"]')
        await expect(run.locator(".run-status")).to_have_text("finished after 1 turn", timeout=120_000)
        await expect(run.get_by_text("Waiting:")).to_have_count(0)
        await space.goto(space_url)
        for page in (space, phone):
            await page.get_by_text("cwd=/home/rig/worktree").first.wait_for()
            await expect(page.get_by_text("Waiting:")).to_have_count(0)
        for monitor, monitor_console in monitors:
            await monitor.get_by_text("completed").first.wait_for(timeout=120_000)
            await expect(monitor.get_by_text("Waiting:")).to_have_count(0)
            assert monitor_console.errors == []
        await packs.get_by_text("ready", exact=True).first.wait_for(timeout=30_000)
        await expect(building).to_have_count(0)
        assert console.errors == [] and phone_console.errors == [] and settings_console.errors == []
