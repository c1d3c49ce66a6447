"""The chat bridge's status in the web client while the provider cannot be reached: the status line says
"Connecting…" with the last error (the network's words) and the time of the next attempt, then "Connected" with
nothing more once the provider is back. Debian's Chromium against the real server; axe finds nothing serious,
light and dark, desktop and phone width."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.async_api import expect

from hangar.core.clock import FakeClock
from tests.integration.test_chat_unreachable import at, chat_server, connect, next_attempt, status_when
from tests.peers.slack_emulator import APP_TOKEN, BOT_TOKEN, running_slack
from tests.support.chromium import CHROMIUM
from tests.support.ports import free_port
from tests.support.webclient import axe_violations, built_web_client, chromium, open_signed_in, shot

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Makefile APT_PACKAGES)")


async def test_the_status_line_says_what_is_wrong_and_when_it_tries_next(tmp_path: Path) -> None:
    port, clock = free_port(), FakeClock()
    dist = built_web_client()
    async with chat_server(tmp_path / "data", port, clock, web_dist=dist) as (srv, client), chromium() as browser:
        ws = await srv.new_workspace("acme")
        await connect(client, ws)
        failing = await status_when(client, ws, lambda s: "nextRetryAt" in s)
        url = f"{srv.url}/settings/workspaces/{ws}"
        pages = []
        for context in ({}, {"color_scheme": "dark", "viewport": {"width": 375, "height": 800}}):
            page, console = await open_signed_in(browser, url, srv.owner_token, **context)
            status = page.get_by_role("status", name="Slack connection")
            await expect(status).to_contain_text("Connecting…")
            await expect(status).to_contain_text("auth.test: the chat provider could not be reached")
            await expect(status).to_contain_text(f"127.0.0.1:{port}")
            await expect(status.locator("time").first).to_have_attribute("datetime", failing["lastError"]["at"])
            next_time = status.get_by_text("Next attempt at")
            await expect(next_time).to_be_visible()
            assert await next_time.locator("time").get_attribute("datetime") == failing["nextRetryAt"]
            assert BOT_TOKEN not in await page.content() and APP_TOKEN not in await page.content()
            assert await axe_violations(page) == []
            if not context:
                await status.scroll_into_view_if_needed()
                await shot(page, "chat-bridge-connecting")
            pages.append((page, console))

        async with running_slack(clock, port=port) as slack:
            await next_attempt(clock, failing)
            await slack.wait_hellos(1)
            for page, console in pages:
                status = page.get_by_role("status", name="Slack connection")
                await status.scroll_into_view_if_needed()  # the status is read again while it is on screen
                await expect(status).to_contain_text("Connected", timeout=20_000)
                await expect(status).not_to_contain_text("Last error")
                await expect(status).not_to_contain_text("Next attempt")
                assert console.errors == []
        assert at(failing["nextRetryAt"]) >= at(failing["lastError"]["at"])
