"""The space screen end to end: Debian's Chromium, driven by Playwright, against a real server serving the real
build of ``web/``. Messages stream between two pages; an ``openai`` agent on a scripted model server replies
through an @mention and its turn streams in (reasoning collapsed, tool calls as rows), then is interrupted; a
10,000-message space opens and scrolls (figures printed; run with -s); a terminal rig runs a command typed into
xterm.js, takes a file drop and changes hands. axe finds no serious or critical violation; no console errors."""

from __future__ import annotations

import re
import statistics
import time
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from hangar.core.ids import new_id
from hangar.workspace import tables
from tests.integration.rigs_env import rigs_server
from tests.support.chromium import CHROMIUM
from tests.support.rpc import RpcClient
from tests.support.server import running_server
from tests.support.webclient import axe_violations, chromium, open_signed_in, shot, stored_credential
from tests.unit.agents.fake_openai import Reply, ToolCall, running_fake_openai, text
from tests.unit.agents.support import server_parts

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Makefile APT_PACKAGES)")


def space_url(base: str, ws: str, space: str) -> str:
    return f"{base}/workspaces/{ws}/spaces/{space}"


async def test_messages_stream_between_pages_and_a_mentioned_agent_replies(tmp_path: Path, dist: Path) -> None:
    async with (
        running_fake_openai() as fake,
        running_server(tmp_path, parts=server_parts(), web_dist=dist) as srv,
        chromium() as browser,
    ):
        ws = await srv.new_workspace("Crew")
        async with RpcClient(srv.ws_url, srv.owner_token) as owner:
            space = (await owner.call("spaces.create", workspace_id=ws, title="Launch"))["id"]
            agent = await owner.call(
                "agents.create",
                workspace_id=ws,
                name="Ada",
                role="member",
                systemPrompt="You are careful.",
                adapter={"type": "openai", "baseUrl": fake.url, "model": "m1", "apiKey": "sk-test"},
            )
        fake.script(
            "m1",
            Reply(reasoning="I should look around first.", tool_calls=(ToolCall("list_files", {}),)),
            text("Hello from Ada, streamed in pieces.", chunk_size=3, delay_between_chunks=0.05),
            Reply(text="This takes a while", stall_seconds=30),
        )
        member = await srv.new_user_token(ws, "member", name="Uma")
        url = space_url(srv.url, ws, space)
        page, console = await open_signed_in(browser, url, srv.owner_token)
        other, other_console = await open_signed_in(browser, url, member)
        for p in (page, other):
            await p.get_by_role("heading", name="Launch").wait_for()
            await p.get_by_text("No messages yet").wait_for()
        assert await axe_violations(page) == []

        # A message posted on one page streams into the other.
        box = page.get_by_role("textbox", name="Message")
        await box.fill("Good morning, crew")
        await box.press("Enter")
        await other.get_by_role("log", name="Messages").get_by_text("Good morning, crew").wait_for()
        assert await box.input_value() == ""

        # Typing @ suggests the workspace's agents; picking one runs it on the message.
        await box.press_sequentially("@Ad")
        option = page.get_by_role("option", name="@Ada member")
        await option.wait_for()
        await box.press("Enter")
        assert await box.input_value() == "@Ada "
        await box.press_sequentially("please say hello")
        await page.get_by_role("button", name="Send to Ada").wait_for()
        await box.press("Enter")

        log = other.get_by_role("log", name="Messages")
        await log.get_by_text("@Ada please say hello").wait_for()
        run = log.get_by_role("region", name="Run of Ada")
        await run.wait_for()
        # The reply streams in and lands as Ada's message; the turn's steps stay in the run's block.
        await log.locator('.msg[data-kind="agent"]').get_by_text("Hello from Ada, streamed in pieces.").wait_for()
        await run.get_by_text("finished after 2 turns").wait_for(timeout=20_000)
        await shot(other, "space-agent-reply")
        reasoning = run.locator("details.reasoning")
        assert await reasoning.get_attribute("open") is None  # collapsed
        await reasoning.locator("summary").click()
        await run.get_by_text("I should look around first.").wait_for()
        tool = run.locator("details.tool", has_text="list_files")
        await tool.locator("summary").click()
        await tool.get_by_text("Result").wait_for()
        assert await axe_violations(other) == []

        # A run can be interrupted from the page while it works.
        await box.fill("@Ada take your time")
        await box.press("Enter")
        await page.get_by_role("status").filter(has_text="1 agent run in progress").wait_for()
        await page.get_by_role("button", name="Interrupt").click()
        await page.get_by_text("interrupted after 1 turn").wait_for(timeout=20_000)
        async with RpcClient(srv.ws_url, srv.owner_token) as owner:
            runs = (await owner.call("runs.list", workspace_id=ws, spaceId=space))["runs"]
        assert [r["outcome"] for r in runs] == ["interrupted", "ok"]
        assert all(r["agentId"] == agent["id"] for r in runs)
        assert console.errors == [] and other_console.errors == []


async def seed_messages(srv: Any, ws: str, space: str, count: int) -> None:
    """``count`` messages written straight into the space's table (history, so no events)."""
    now = srv.ctx.clock.now()
    rows = [
        {
            "id": new_id(),
            "space_id": space,
            "author_kind": "user" if i % 3 else "agent",
            "author_id": "seed",
            "author_name": "Seeder" if i % 3 else "Ada",
            "content": f"Seeded message number {i}." + (" A longer line that wraps on narrow screens." * (i % 4)),
            "metadata": {},
            "run_id": None,
            "created_at": now,
        }
        for i in range(count)
    ]
    engine = await srv.ctx.dbs.workspace(ws)
    async with engine.begin() as conn:
        await conn.execute(sa.insert(tables.messages), rows)


# Frame times while the page scrolls by a fixed step each animation frame, measured in the page.
SCROLL_FRAMES = """async ([step, frames]) => {
  const el = document.querySelector('[role="log"]');
  const times = [];
  let last = performance.now();
  for (let i = 0; i < frames; i++) {
    el.scrollTop -= step;
    await new Promise((r) => requestAnimationFrame(r));
    const now = performance.now();
    times.push(now - last);
    last = now;
  }
  return times;
}"""

# The terminal's screen, line by line.
SCREEN_LINES = "() => [...document.querySelectorAll('.xterm-rows > div')].map((d) => d.textContent.trim())"

# When the newest seeded message first appears on screen, measured in the page from navigation start.
OPENED = """(() => {
  const look = () => {
    if (document.querySelector('.msg[data-seq="' + window.__newest + '"]')) window.__opened = performance.now();
    else requestAnimationFrame(look);
  };
  requestAnimationFrame(look);
})();"""


async def test_a_space_of_10000_messages_opens_fast_and_scrolls_smoothly(tmp_path: Path, dist: Path) -> None:
    async with running_server(tmp_path, parts=server_parts(), web_dist=dist) as srv, chromium() as browser:
        ws = await srv.new_workspace("Big")
        async with RpcClient(srv.ws_url, srv.owner_token) as owner:
            space = (await owner.call("spaces.create", workspace_id=ws, title="Long history"))["id"]
            await seed_messages(srv, ws, space, 10_000)
            newest = (await owner.call("messages.list", workspace_id=ws, spaceId=space, last=1))["messages"][0]
        page, console = await open_signed_in(browser, f"{srv.url}/", srv.owner_token)
        await page.get_by_role("status").filter(has_text="Connected").wait_for()
        await page.add_init_script(f"window.__newest = {newest['seq']};" + OPENED)
        log = page.get_by_role("log", name="Messages")
        opens: list[float] = []
        # Three opens: the first also fetches the screen's chunk, and other work on a shared machine only ever adds
        # time, so the best of them is the screen's own cost (all three are printed).
        for _ in range(3):
            started = time.perf_counter()
            await page.goto(space_url(srv.url, ws, space))
            await log.get_by_text("Seeded message number 9999.").wait_for()
            seen_ms = (time.perf_counter() - started) * 1000
            opens.append(await page.evaluate("window.__opened"))
        print(
            f"\n10,000-message space: newest message on screen {', '.join(f'{o:.0f}' for o in opens)} ms after"
            f" navigation start (last seen by the test after {seen_ms:.0f} ms)"
        )
        # The figures go to README (numbers, not timed assertions: a shared machine only ever adds time).
        # Scroll up through the history: older pages load as the top comes near; the DOM stays small.
        times: list[float] = []
        for _ in range(200):
            times += await page.evaluate(SCROLL_FRAMES, [3000, 30])
            count = int(await log.get_attribute("data-count") or 0)
            if count >= 10_000:
                break
        await page.wait_for_function(
            "() => document.querySelector('[role=log]').dataset.count >= 10000", timeout=60_000
        )
        rendered = await page.locator(".vitem").count()
        times += await page.evaluate(SCROLL_FRAMES, [-2000, 120])  # fast scroll back down through it all
        times.sort()
        p95 = times[int(len(times) * 0.95)]
        print(
            f"  scrolling: {len(times)} frames, median {statistics.median(times):.1f} ms, p95 {p95:.1f} ms, "
            f"worst {times[-1]:.1f} ms; {rendered} rows in the DOM of 10,000 loaded"
        )
        assert rendered < 200  # virtualized: the rows near the view, not the history
        # Jumping to the top shows the first message.
        await page.evaluate("document.querySelector('[role=log]').scrollTop = 0")
        await log.get_by_text("Seeded message number 0.", exact=True).wait_for()
        assert await axe_violations(page) == []
        assert console.errors == []


@pytest.mark.packs("terminal")
async def test_a_terminal_rig_runs_what_is_typed_into_xterm(tmp_path: Path, dist: Path) -> None:
    async with rigs_server(tmp_path, web_dist=dist) as env, chromium() as browser:
        url = space_url(env.srv.url, env.ws, env.space)
        page, console = await open_signed_in(
            browser, url, env.srv.owner_token, permissions=["clipboard-read", "clipboard-write"]
        )
        await page.get_by_role("heading", name="rig tests").wait_for()
        await page.get_by_role("button", name="Open a terminal").click()
        tab = page.get_by_role("tab", name="Terminal")
        await tab.wait_for(timeout=120_000)
        assert await tab.get_attribute("aria-selected") == "true"
        await page.get_by_role("status").filter(has_text="Terminal connected").wait_for(timeout=60_000)
        rig_id = page.url.rsplit("/", 1)[1]
        assert page.url == f"{env.srv.url}/workspaces/{env.ws}/rigs/{rig_id}"

        screen = page.locator(".xterm-rows")
        await page.locator(".xterm-helper-textarea").focus()
        await page.keyboard.type("echo typed-$((6*7))-here")
        await page.keyboard.press("Enter")
        await screen.get_by_text("typed-42-here").last.wait_for(timeout=30_000)

        # The PTY was sized to fit the box, not left at 80x24.
        await page.keyboard.type("stty size")
        await page.keyboard.press("Enter")
        await page.wait_for_function(f"() => ({SCREEN_LINES})().some((t) => /^\\d+ \\d+$/.test(t))")
        rows_cols = next(t for t in await page.evaluate(SCREEN_LINES) if re.fullmatch(r"\d+ \d+", t))
        assert rows_cols != "24 80"

        # Paste reaches the terminal from the clipboard.
        await page.evaluate("navigator.clipboard.writeText('echo pasted-$((2+3))')")
        await page.get_by_role("button", name="Paste").click()
        # The button reads the clipboard asynchronously: Enter goes after the pasted line shows, not before it.
        await screen.get_by_text("echo pasted-$((2+3))").last.wait_for(timeout=30_000)
        await page.keyboard.press("Enter")
        await screen.get_by_text("pasted-5").last.wait_for(timeout=30_000)

        # A file dropped onto the rig lands in ~/drops.
        await page.locator('input[type="file"]').set_input_files(
            files=[{"name": "notes.txt", "mimeType": "text/plain", "buffer": b"dropped through the lane"}]
        )
        await page.get_by_role("list", name="Files that landed").get_by_text("/home/rig/drops/notes.txt").wait_for()
        out = await env.exec(rig_id, "cat ~/drops/notes.txt")
        assert out["stdout"] == "dropped through the lane"

        # Take control and hand it back; the controller is shown.
        await page.get_by_role("button", name="Take control").click()
        await page.get_by_text("You have control").wait_for()
        assert (await env.status(rig_id))["controller"]["userId"]
        await page.get_by_role("button", name="Hand back").click()
        await page.get_by_text("Nobody has taken control").wait_for()
        assert await axe_violations(page, exclude=[".xterm"]) == []

        # The rig's own link opens its tab in its space.
        held = stored_credential(env.srv.url, env.srv.owner_token)
        again = await (await browser.new_context(storage_state=held)).new_page()
        await again.goto(f"{env.srv.url}/workspaces/{env.ws}/rigs/{rig_id}")
        await again.get_by_role("status").filter(has_text="Terminal connected").wait_for(timeout=60_000)
        # xterm.js's own style rules apply although the policy forbids inline <style> (its cells are inline-blocks).
        cell = await page.evaluate("getComputedStyle(document.querySelector('.xterm-rows span')).display")
        assert cell == "inline-block"
        assert console.errors == [], console.errors
