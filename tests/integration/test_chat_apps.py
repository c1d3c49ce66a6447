"""Creating and editing the workspace's chat app from the product, through the manifest API of the Slack
emulator, with the configuration refresh token rotated and stored at every use."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from tests.peers.slack_emulator import APP_ID, APP_TOKEN, BOT_TOKEN
from tests.support.chat import PROVIDER, World, until, world
from tests.support.rpc import RpcError


def _files(w: World) -> Path:
    return w.srv.data_dir / w.ws / "chat_credentials"


@pytest.mark.sqlite_only("reads the chat credential files, sealed rows on PostgreSQL")
async def test_create_an_app_then_read_and_edit_its_bot_profile(tmp_path: Path) -> None:
    async with world(tmp_path, link=False, connect=False) as w:
        with pytest.raises(RpcError) as no_token:
            await w.client.call("chat.createApp", workspace_id=w.ws, provider=PROVIDER)
        assert no_token.value.code == "refused" and "refresh token" in no_token.value.message
        with pytest.raises(RpcError) as wrong:
            await w.client.call("chat.createApp", workspace_id=w.ws, configRefreshToken="xoxb-not-it")
        assert wrong.value.code == "invalid_args" and "must start with xoxe" in wrong.value.message

        first = w.slack.issue_refresh_token()
        created = await w.client.call(
            "chat.createApp", workspace_id=w.ws, configRefreshToken=first, appName="Acme bot", command="/Ask Me!"
        )
        assert created["appId"] == APP_ID and created["installUrl"] and len(created["remainingSteps"]) == 3
        assert created["profile"]["command"] == "askme"
        manifest = w.slack.manifest
        assert manifest is not None and manifest["settings"]["socket_mode_enabled"] is True
        assert manifest["display_information"]["name"] == "Acme bot"
        assert [c["command"] for c in manifest["features"]["slash_commands"]] == ["/askme"]
        # The refresh token was spent; the rotated one is stored (owner-only) and the app's secrets are not.
        setup_file = _files(w) / f"{PROVIDER}_setup.json"
        setup = json.loads(setup_file.read_text())
        assert setup["configRefreshToken"] not in ("", first) and setup["appId"] == APP_ID
        assert stat.S_IMODE(setup_file.stat().st_mode) == 0o600
        assert "client_secret" not in setup_file.read_text() and "signing" not in setup_file.read_text()
        # Reading the profile spends the stored token again and answers what the provider has.
        profile = await w.client.call("chat.botProfile", workspace_id=w.ws)
        assert profile["appName"] == "Acme bot" and profile["command"] == "askme"
        second = json.loads(setup_file.read_text())["configRefreshToken"]
        assert second != setup["configRefreshToken"]
        # An edit within the granted scopes is live at once; nothing the admin left empty changes.
        edited = await w.client.call("chat.updateBotProfile", workspace_id=w.ws, botDisplayName="Acme", appName="")
        assert "remainingStep" not in edited or edited["remainingStep"] is None
        assert edited["profile"]["botDisplayName"] == "Acme" and edited["profile"]["appName"] == "Acme bot"
        # An app someone changed by hand loses a scope: the edit merges it back, and a reinstall is left.
        assert w.slack.manifest is not None
        w.slack.manifest["oauth_config"]["scopes"]["bot"].remove("users:read.email")
        w.slack.manifest["features"]["slash_commands"].append({"command": "/theirs", "description": "Not ours"})
        again = await w.client.call("chat.updateBotProfile", workspace_id=w.ws, description="Helps")
        assert again["remainingStep"] == "reinstall"
        assert "users:read.email" in w.slack.manifest["oauth_config"]["scopes"]["bot"]
        assert {c["command"] for c in w.slack.manifest["features"]["slash_commands"]} == {"/theirs", "/askme"}
        # The tokens never come back in any answer, nor in the audit.
        audit = json.dumps(await w.client.call("audit.list", workspace_id=w.ws))
        assert "xoxe" not in audit and "xoxe" not in json.dumps([created, profile, edited, again])


async def test_the_setup_link_dials_nothing(tmp_path: Path) -> None:
    async with world(tmp_path, link=False, connect=False) as w:
        before = len(w.slack.calls)
        link = await w.client.call("chat.setupLink", workspace_id=w.ws, appName="Acme")
        assert link["url"].startswith("https://api.slack.com/apps?") and link["profile"]["appName"] == "Acme"
        assert len(w.slack.calls) == before


async def test_until_the_command_is_used_the_bot_names_the_profile_s_word(tmp_path: Path) -> None:
    async with world(tmp_path, link=False, connect=False) as w:
        token = w.slack.issue_refresh_token()
        await w.client.call("chat.createApp", workspace_id=w.ws, configRefreshToken=token, command="askme")
        credentials = {"botToken": BOT_TOKEN, "appToken": APP_TOKEN}
        await w.client.call("chat.connect", workspace_id=w.ws, provider=PROVIDER, credentials=credentials)
        await w.slack.wait_hellos(1)
        sent = await w.slack.mention("C0GENERAL", "U0ALICE", "hello?")
        refusal = await until(lambda: [m for m in w.slack.messages if m.get("thread_ts") == sent.ts])
        assert "`/askme link <code>`" in refusal[0]["text"]
