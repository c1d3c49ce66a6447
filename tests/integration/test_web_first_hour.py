"""A new owner's first hour, end to end: ``hangar serve`` started from the checkout on a fresh data directory as
``make run`` starts it (the website too, ports of the system's choosing, the suite's image packs), and Debian's
Chromium, driven by Playwright, doing what a person does through the web client alone.

The one-time sign-in link the first start printed signs the browser in; the owner creates a workspace, a command
agent (a one-line ``sed`` run confined in its enclosure) and a space, and talks to the agent there with an
@mention; opens a terminal rig from the space and runs a command typed into it, and a Chromium rig, driven
through its address bar to the server's own website; then writes a pipeline whose agent step's agent is chosen
from the editor's picker, and runs it to its end. Every screen on the way passes axe (light and dark, desktop and
phone width) and the page logs no console error."""

from __future__ import annotations

import asyncio
import re
import tempfile
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import expect

from hangar.rigs.lanes.fence import unfence
from tests.integration.test_web_names import ASK
from tests.support.chromium import CHROMIUM
from tests.support.disks import detach_disks
from tests.support.packs import PACKS, rigs_unavailable
from tests.support.processes import serve_from_checkout
from tests.support.rpc import RpcClient
from tests.support.webclient import Console, axe_violations, chromium

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Makefile APT_PACKAGES)")

DESKTOP = {"width": 1400, "height": 1000}
PHONE = {"width": 390, "height": 844}
BOOT_MS = 180_000  # bounds against hangs only: a rig's boot, a confined run, on a busy machine
RUN_MS = 120_000
XTERM = ".xterm"  # xterm.js's own markup, which the rig tests leave out of axe's reach too
# The agent: the prompt, its mention taken off, said back. `sed` runs in the agent's enclosure, never on the host.
ECHO_ARGV = "sed\n-e\ns/^@Echo //\n-e\ns/^/pong: /"
# The names test's pipeline (a space opened, the agent asked in it) with no agent yet: the picker chooses it.
PIPELINE = ASK.replace("      agentId: analyst\n", "")
SCREEN_LINES = "() => [...document.querySelectorAll('.xterm-rows > div')].map((d) => d.textContent.trim())"


async def accessible(page: Any, where: str, exclude: tuple[str, ...] = ()) -> None:
    """No serious or critical axe violation on the screen as it is, light and dark, desktop and phone width."""
    for scheme in ("light", "dark"):
        await page.emulate_media(color_scheme=scheme)
        for size in (DESKTOP, PHONE):
            await page.set_viewport_size(size)
            assert await axe_violations(page, exclude=list(exclude)) == [], (where, scheme, size)
    await page.emulate_media(color_scheme="light")
    await page.set_viewport_size(DESKTOP)


async def open_section(page: Any, name: str) -> None:
    link = page.get_by_role("navigation", name="Workspace").get_by_role("link", name=name, exact=True)
    await link.click()
    await expect(link).to_have_attribute("aria-current", "page")


async def address_is(page: Any, url: str) -> None:
    await page.wait_for_function(
        f"() => document.querySelector('.address-field input')?.value === {url!r}", timeout=RUN_MS
    )


async def title_of(url: str) -> str:
    async with httpx.AsyncClient() as http:
        page = await http.get(url)
    assert page.status_code == 200, (url, page.status_code)
    found = re.search(r"<title>([^<]*)</title>", page.text)
    assert found, url
    return found.group(1)


async def shows_title(client: RpcClient, ws: str, rig: str, url: str, want: str) -> None:
    """The rig's current page is at ``url`` with the title ``want`` (the page itself, not an error page). The
    address changes when the navigation commits, before the new document has a title: until then Chromium titles
    it by its address or still by the page before (seen on a loaded machine), so the title is waited for."""
    current: dict[str, Any] = {}
    for _ in range(300):  # a bound against hangs only
        shown = await client.call("browser_use", workspace_id=ws, rigId=rig, action={"action": "pages"})
        (current,) = [p for p in shown["pages"] if p["current"]]
        if unfence(current["url"]) == url and unfence(current["title"]) == want:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"the rig's page did not load {url} titled {want!r}: {current}")


@pytest.mark.packs("terminal", "engine-a")
async def test_a_new_owner_gets_in_and_finds_their_way(dist: Path) -> None:
    if (reason := rigs_unavailable()) is not None:
        pytest.skip(f"enclosures cannot run here: {reason}")
    # A short data directory: rigs keep UNIX sockets (at most 108 bytes of path) beneath it.
    with tempfile.TemporaryDirectory(prefix="hfh-", dir="/tmp") as short:
        env = {"HANGAR_WEB_DIST": str(dist), "HANGAR_RIG_PACKS_DIR": str(PACKS)}
        try:
            with serve_from_checkout(Path(short) / "data", until="owner credential", env=env, site=True) as lines:
                async with chromium() as browser:
                    await first_hour(browser, lines)
        finally:
            detach_disks(Path(short))  # the spaces' disks outlive the server, as on a real host


async def first_hour(browser: Any, lines: dict[str, str]) -> None:
    server, website = lines["server"], lines["website"]
    link = lines[next(k for k in lines if k.startswith("sign-in link"))]
    page = await (await browser.new_context(viewport=DESKTOP)).new_page()
    console = Console(page)

    # The link the first start printed: signed in as the owner, at the list of workspaces.
    await page.goto(link)
    await page.get_by_role("heading", name="Workspaces").wait_for(timeout=30_000)
    assert "signin" not in page.url
    token = await page.evaluate("localStorage.getItem('hangar.token')")
    assert isinstance(token, str)
    await accessible(page, "workspaces")

    # A workspace, its command agent and a space, each made on its screen.
    await page.get_by_role("textbox", name="Name", exact=True).fill("First hour")
    await page.get_by_role("button", name="Create workspace").click()
    await page.get_by_role("heading", name="First hour", exact=True).wait_for()
    ws = page.url.rsplit("/", 1)[1]
    await accessible(page, "workspace overview")

    await open_section(page, "Agents and teams")
    await page.get_by_text("Create an agent", exact=True).click()
    form = page.get_by_role("form", name="New agent")
    await form.get_by_role("radio", name=re.compile("^command")).check()
    await form.get_by_role("textbox", name="Name").fill("Echo")
    await form.get_by_role("textbox", name="Command line, one argument per line").fill(ECHO_ARGV)
    await form.get_by_role("button", name="Create agent").click()
    agents = page.get_by_role("list", name="Agents")
    await agents.get_by_role("listitem").filter(has_text="Echo").get_by_text("command · sed").wait_for()
    await accessible(page, "agents and teams")

    await open_section(page, "Spaces")
    new = page.get_by_role("form", name="New space")
    await new.get_by_role("textbox", name="Title").fill("Launch")
    await new.get_by_role("button", name="Create space").click()
    await page.get_by_role("list", name="Spaces").get_by_role("link", name="Launch").click()
    await page.get_by_role("heading", name="Launch").wait_for()
    space_url = page.url
    space = space_url.rsplit("/", 1)[1]
    await accessible(page, "space, empty")

    # Talking to the agent: picked from the @ suggestions, its reply lands in the conversation.
    box = page.get_by_role("textbox", name="Message")
    await box.press_sequentially("@Ec")
    await page.get_by_role("option", name=re.compile("^@Echo")).wait_for()
    await box.press("Enter")
    await box.press_sequentially("ping 42")
    await page.get_by_role("button", name="Send to Echo").click()
    log = page.get_by_role("log", name="Messages")
    await log.get_by_text("@Echo ping 42").wait_for()
    await log.locator('.msg[data-kind="agent"]').get_by_text("pong: ping 42").wait_for(timeout=RUN_MS)
    await accessible(page, "space with the agent's reply")

    # A terminal rig, opened from the space: what is typed runs there.
    await page.get_by_role("button", name="Open a terminal").click()
    await page.get_by_role("status").filter(has_text="Terminal connected").wait_for(timeout=BOOT_MS)
    await page.locator(".xterm-helper-textarea").focus()
    await page.keyboard.type("echo first-$((6*7))-hour")
    await page.keyboard.press("Enter")
    await page.wait_for_function(f"() => ({SCREEN_LINES})().includes('first-42-hour')", timeout=RUN_MS)
    await accessible(page, "terminal rig", exclude=(XTERM,))

    # A Chromium rig, opened by the browser's name, driven through its address bar to the server's website (on
    # every browser rig's default allowlist, at its own origin).
    engines = page.get_by_label("Browser engine")
    await engines.select_option(label="Chromium")
    await page.get_by_role("button", name="Open a browser").click()
    await page.get_by_role("tab", name="Live view (Chromium)").wait_for(timeout=BOOT_MS)
    live = page.get_by_role("status").filter(has_text="Live view connected (Chromium): watching")
    await live.wait_for(timeout=BOOT_MS)
    rig = page.url.rsplit("/", 1)[1]
    await page.get_by_role("button", name="Take control").click()
    await page.get_by_role("status").filter(has_text="you drive the page").wait_for()
    target = f"{website}/manual/quick-start"
    address = page.get_by_role("textbox", name="Address")
    await address.fill(target)
    await address.press("Enter")
    await address_is(page, target)
    async with RpcClient(server.replace("http", "ws", 1) + "/rpc", token) as client:
        await shows_title(client, ws, rig, target, await title_of(target))
        await accessible(page, "browser rig")

        # A pipeline whose agent step's agent is chosen from the picker, run to its end.
        await page.goto(space_url.split("/spaces/")[0] + "/pipelines")
        await page.get_by_role("heading", name="Pipelines", exact=True).wait_for()
        await page.get_by_role("button", name="New template").click()
        await page.get_by_role("textbox", name=re.compile("Template text")).fill(PIPELINE)
        pickers = page.get_by_role("region", name="Agents, teams, spaces and repositories")
        await pickers.get_by_role("combobox", name="Step").select_option(label="Ask the analyst (ask)")
        await pickers.get_by_role("combobox", name="Agent agentId").select_option(label="Echo")
        await page.get_by_text("The template is valid.").wait_for()
        await accessible(page, "pipeline editor")
        await page.get_by_role("button", name="Create template").click()
        await page.get_by_role("status").filter(has_text="Saved ask").wait_for()
        await page.get_by_role("button", name="Run Ask the analyst").click()
        await page.get_by_role("button", name="Start run").click()
        await page.wait_for_url(re.compile(rf"/workspaces/{ws}/pipelines/runs/[^/]+$"))
        await page.get_by_role("status").filter(has_text="Run completed").wait_for(timeout=RUN_MS)
        await accessible(page, "pipeline run")
        # The agent answered in the space the pipeline opened.
        agent = next(a for a in (await client.call("agents.list", workspace_id=ws))["agents"] if a["name"] == "Echo")
        runs = (await client.call("runs.list", workspace_id=ws, agentId=agent["id"]))["runs"]
        (piped,) = [r for r in runs if r["spaceId"] != space]
        assert piped["outcome"] == "ok", piped
        said = await client.call("messages.list", workspace_id=ws, spaceId=piped["spaceId"])
        assert said["messages"][-1]["content"].strip() == "pong: echo from the pipeline"
    assert console.errors == [], console.errors
