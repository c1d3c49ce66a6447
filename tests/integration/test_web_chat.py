"""The chat bridge's settings in the web client end to end: Debian's Chromium driven by Playwright against a real
server serving the real build, with the Slack emulator as the provider. The guided setup (the composed app-page
link, the app created with a refresh token and the steps left), the connect dialog rendered from the descriptor
(a wrong prefix refused with the descriptor's sentence before anything is sent, the emulator's tokens connecting,
no token ever in the page afterwards), the bot profile edited through the provider's manifest, the link dialog
closing by itself once the code is redeemed from the chat, the roster following the watch, unlinking, a member's
view, and a terminal provider error followed live. axe finds nothing serious, light and dark, at phone width, and
the console stays clean."""

from __future__ import annotations

import os
import re
import socket
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import expect

from hangar.identity import IdentityService
from tests.peers.slack_emulator import APP_TOKEN, BOT_TOKEN
from tests.support.chat import ALICE, GENERAL, World, world
from tests.support.chromium import CHROMIUM
from tests.support.webclient import Console, axe_violations, chromium, shot, stored_credential

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Makefile APT_PACKAGES)")

REFUSAL = "Bot user OAuth token must start with xoxb-"  # the descriptor's sentence (src/hangar/chat/descriptor.py)


async def open_settings(
    browser: Any, w: World, token: str | None = None, **context: Any
) -> tuple[Any, Console, list[str]]:
    """The workspace's settings page, signed in, with every RPC frame the page sends recorded."""
    if token is None:
        token = await w.srv.ctx.service(IdentityService).issue_device(w.srv.owner_id, "chat-browser")
    url = f"{w.srv.url}/settings/workspaces/{w.ws}"
    page = await (await browser.new_context(storage_state=stored_credential(url, token), **context)).new_page()
    console = Console(page)
    sent: list[str] = []
    page.on("websocket", lambda ws: ws.on("framesent", lambda payload: sent.append(str(payload))))
    await page.goto(url)
    await page.get_by_role("heading", name="Chat bridge").wait_for()
    return page, console, sent


def status(page: Any) -> Any:
    return page.get_by_role("status", name="Slack connection")


async def no_token_in_page(page: Any, *tokens: str) -> None:
    html = await page.content()
    values = await page.evaluate("() => [...document.querySelectorAll('input, textarea')].map(e => e.value)")
    for token in tokens:
        assert token not in html
        assert all(token not in v for v in values)


async def test_chat_bridge_settings_end_to_end(tmp_path: Path, dist: Path) -> None:
    async with world(tmp_path, link=False, connect=False, web_dist=dist) as w, chromium() as browser:
        slack = w.slack
        page, console, sent = await open_settings(browser, w)
        await expect(status(page)).to_contain_text("Not connected")
        assert await axe_violations(page) == []

        # Guided setup, by hand: the provider's app-creation page composed from the profile, opened in a new tab.
        setup = page.get_by_role("form", name="Bot profile for a new app")
        app_name = setup.get_by_role("textbox", name="App name")
        await expect(app_name).to_have_value("Hangar acme")  # the default, from chat.setupLink
        await app_name.fill("x" * 36)
        await setup.get_by_role("button", name="Open the provider's app page").click()
        await setup.get_by_text("App name is 36 characters; the limit is 35").wait_for()
        await app_name.fill("Hangar Acme Ops")
        await setup.get_by_role("button", name="Open the provider's app page").click()
        link = setup.get_by_role("link", name=re.compile("Create the app at Slack"))
        await link.wait_for()
        assert (await link.get_attribute("href") or "").startswith("https://api.slack.com/apps")
        assert await link.get_attribute("target") == "_blank"
        assert "noopener" in (await link.get_attribute("rel") or "")
        assert slack.calls == []  # composing the link dials nobody

        # Guided setup, by Hangar: the app created with a refresh token (write-only), the steps left shown.
        refresh = slack.issue_refresh_token()
        await setup.get_by_label("App configuration refresh token").fill(refresh)
        await setup.get_by_role("button", name="Create the app for me").click()
        created = page.get_by_role("status", name="App created")
        await created.get_by_text("Create an app-level token with the connections:write scope.").wait_for()
        await created.get_by_role("link", name=re.compile("Install the app to your team")).wait_for()
        assert slack.manifest is not None and slack.manifest["display_information"]["name"] == "Hangar Acme Ops"
        await expect(setup.get_by_label("App configuration refresh token")).to_have_value("")
        await no_token_in_page(page, refresh)

        # Connect: a wrong prefix is refused here with the descriptor's sentence, and nothing goes to the server.
        connect = page.get_by_role("form", name="Connect Slack")
        await connect.get_by_label("Bot user OAuth token").fill("xapp-not-a-bot-token")
        await connect.get_by_label("App-level token").fill(APP_TOKEN)
        await connect.get_by_role("button", name="Connect", exact=True).click()
        await expect(connect.get_by_role("alert")).to_have_text(REFUSAL)
        await expect(connect.get_by_label("Bot user OAuth token")).to_be_focused()
        assert not [f for f in sent if "chat.connect" in f]
        assert slack.calls_of("auth.test") == []
        await expect(status(page)).to_contain_text("Not connected")
        await expect(connect.get_by_text("Left empty, the stored value is kept.")).to_be_visible()

        # The emulator's tokens connect; the boxes empty themselves and no token is in the page.
        await connect.get_by_label("Bot user OAuth token").fill(BOT_TOKEN)
        await connect.get_by_role("button", name="Connect", exact=True).click()
        await expect(status(page)).to_contain_text("Connected", timeout=20_000)
        await expect(status(page)).to_contain_text("Replies stream")
        # The server holding the connection is named (this test's server runs in the test's process).
        await expect(status(page)).to_contain_text(f"Held by server {socket.gethostname()} (pid {os.getpid()})")
        replace = page.get_by_role("form", name="Replace the tokens")
        await expect(replace.get_by_label("Bot user OAuth token")).to_have_value("")
        await expect(replace.get_by_label("App-level token")).to_have_value("")
        await no_token_in_page(page, BOT_TOKEN, APP_TOKEN, refresh)
        assert [f for f in sent if "chat.connect" in f]

        # The bot profile, read from the provider and edited: a new command word and description.
        edit = page.get_by_role("form", name="Edit the bot profile")
        await expect(edit.get_by_role("textbox", name="App name")).to_have_value("Hangar Acme Ops", timeout=20_000)
        await edit.get_by_role("textbox", name="Description", exact=True).fill("Release helpers for Acme")
        await edit.get_by_role("textbox", name="Slash command").fill("/Ops")
        await edit.get_by_text("sent as /ops").wait_for()
        # The provider refuses the manifest once: the server's error shows inline.
        slack.manifest_errors = [{"message": "a refused field", "pointer": "/display_information"}]
        await edit.get_by_role("button", name="Save the bot profile").click()
        profile_section = page.get_by_role("region", name="Bot profile")
        await expect(profile_section.get_by_role("alert")).to_contain_text("/display_information: a refused field")
        slack.manifest_errors = None
        # The app lacks a scope the bridge needs: the edit adds it, and the provider wants a reinstall.
        slack.manifest["oauth_config"]["scopes"]["bot"].remove("users:read.email")
        await edit.get_by_role("button", name="Save the bot profile").click()
        await profile_section.get_by_role("status").filter(has_text="Reinstall the app to apply").wait_for()
        assert "users:read.email" in slack.manifest["oauth_config"]["scopes"]["bot"]
        assert slack.manifest["display_information"]["description"] == "Release helpers for Acme"
        assert [c["command"] for c in slack.manifest["features"]["slash_commands"]] == ["/ops"]
        await expect(edit.get_by_role("textbox", name="Slash command")).to_have_value("ops")
        assert await axe_violations(page) == []
        await page.evaluate("document.getElementById('chat-bridge').scrollIntoView({block: 'start'})")
        await shot(page, "chat-bridge-settings")

        # The link dialog: the code, its countdown and the exact command; it closes once the chat redeems the code.
        await page.get_by_role("button", name="Link my chat account").click()
        dialog = page.get_by_role("dialog", name="Link my chat account")
        await dialog.wait_for()
        code = (await dialog.locator(".chat-code").inner_text()).strip()
        assert re.fullmatch(r"[23456789ABCDEFGHJKLMNPQRSTVWXYZ]{6}", code), code
        await expect(dialog.get_by_label("Command to send")).to_have_text(f"/ops link {code}")
        await expect(dialog.locator("time")).to_have_text(re.compile(r"^1[45]:\d\d$"))
        assert await axe_violations(page) == []
        answer = await slack.acked(await slack.slash("/ops", f"link {code}", ALICE, GENERAL))
        assert answer is not None and "Linked" in answer["text"], answer
        await dialog.wait_for(state="hidden")
        await page.get_by_role("status").filter(has_text=f"Slack account {ALICE} is now yours").wait_for()
        roster = page.get_by_role("table", name="Linked members")
        row = roster.get_by_role("row").filter(has_text=ALICE)
        await expect(row).to_contain_text("(you)")
        await expect(row).to_contain_text("code")

        # Unlinking oneself: the roster follows the watch.
        owner = (await w.client.call("users.me"))["displayName"]
        await row.get_by_role("button", name=f"Unlink {owner}").click()
        await (
            page.get_by_role("group", name=re.compile("Unlink your Slack account"))
            .get_by_role("button", name="Unlink", exact=True)
            .click()
        )
        await page.get_by_text("No one has linked a Slack account yet.").wait_for()
        assert await w.client.call("chat.listUserLinks", workspace_id=w.ws) == []

        # A member, dark and at phone width: the status and their own link, no connect dialog, no setup.
        bob = await w.srv.new_user_token(w.ws, "member", name="bob")
        phone, phone_console, _ = await open_settings(
            browser, w, bob, viewport={"width": 375, "height": 800}, color_scheme="dark"
        )
        await expect(status(phone)).to_contain_text("Connected")
        assert await phone.get_by_role("form", name=re.compile("Connect Slack|Replace the tokens")).count() == 0
        assert await phone.get_by_role("button", name="Create the app for me").count() == 0
        await phone.get_by_text("Only admins and owners connect Slack").wait_for()
        await phone.get_by_role("button", name="Link my chat account").click()
        await phone.get_by_role("dialog", name="Link my chat account").wait_for()
        assert await axe_violations(phone) == []
        await phone.get_by_role("button", name="Close").click()
        await phone.get_by_role("dialog", name="Link my chat account").wait_for(state="hidden")
        assert await axe_violations(phone) == []
        assert await phone.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0

        # The member links; the admin's roster follows, and an admin may unlink anyone.
        slack.add_user("U0BOB", "bob", "bob@example.com")
        await phone.get_by_role("button", name="Link my chat account").click()
        bob_dialog = phone.get_by_role("dialog", name="Link my chat account")
        bob_code = (await bob_dialog.locator(".chat-code").inner_text()).strip()
        await slack.acked(await slack.slash("/ops", f"link {bob_code}", "U0BOB", GENERAL))
        await bob_dialog.wait_for(state="hidden")
        bob_row = roster.get_by_role("row").filter(has_text="U0BOB")
        await expect(bob_row).to_contain_text("bob")
        await bob_row.get_by_role("button", name="Unlink bob").click()
        await (
            page.get_by_role("group", name=re.compile("Unlink bob's Slack account"))
            .get_by_role("button", name="Unlink", exact=True)
            .click()
        )
        await phone.get_by_text("No one has linked a Slack account yet.").wait_for()

        # The provider revokes the app token and drops the socket: the terminal error appears with its words.
        slack.refuse_token(APP_TOKEN, "token_revoked")
        await slack.drop()
        await expect(status(page)).to_contain_text("Connection error", timeout=20_000)
        await expect(status(page)).to_contain_text("token_revoked")
        await expect(status(phone)).to_contain_text("Connection error", timeout=20_000)

        # Disconnect asks first, then deletes the tokens.
        await page.get_by_role("button", name="Disconnect Slack").click()
        await (
            page.get_by_role("group", name=re.compile("Disconnect Slack\\?"))
            .get_by_role("button", name="Disconnect", exact=True)
            .click()
        )
        await expect(status(page)).to_contain_text("Not connected")

        # Dark at desktop width for the admin as well.
        dark, dark_console, _ = await open_settings(browser, w, color_scheme="dark")
        await expect(status(dark)).to_contain_text("Not connected")
        assert await axe_violations(dark) == []
        assert console.errors == [] and phone_console.errors == [] and dark_console.errors == []
