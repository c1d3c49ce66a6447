"""A reply that repeats a secret, sent to the chat through the bridge on a running server with the Slack
emulator: the workspace's agents' secrets never reach the provider, as they are or base64-encoded, and an audit
row records that something was blanked (never what)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

from tests.support.chat import ALICE, GENERAL, until, world
from tests.unit.agents.fake_openai import text

SECRET = "ck-live/5ecr3t+Chat-0042"


async def test_an_agents_reply_repeating_a_secret_reaches_the_chat_blanked(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        command = {"type": "command", "argv": ["true"], "secretEnv": {"DEPLOY_KEY": SECRET}}
        await w.client.call("agents.create", workspace_id=w.ws, name="Deployer", adapter=command)
        encoded = base64.b64encode(SECRET.encode()).decode()
        w.model.script("m", text(f"The deploy key is {SECRET}, or {encoded}."))
        await w.slack.mention(GENERAL, ALICE, "what is the deploy key?")
        await until(lambda: [s for s in w.slack.streams.values() if s.state == "stopped"])
        sent = json.dumps([c.args for c in w.slack.calls])
        assert SECRET not in sent and encoded not in sent
        (stream,) = [s for s in w.slack.streams.values() if s.state == "stopped"]
        assert "The deploy key is [redacted], or [redacted]." in stream.text
        audit = json.dumps(await w.client.call("audit.list", workspace_id=w.ws))
        assert "chat.redacted" in audit and SECRET not in audit
