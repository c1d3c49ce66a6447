"""A reviewer that prints a secret it was given, attacked on a running server with the GitHub API emulator: the
values of the workspace's agents' secrets (a command agent's ``secretEnv``, an API key) and the forge's own
credentials never reach the forge in a posted review, not as they are and not in their common encodings; the
step says how many it blanked (never what) and an audit row records it."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from tests.integration.test_confined_user_code import step
from tests.integration.test_forges_connect import forge_server
from tests.integration.test_forges_review import PR, connect, finding, payload, run
from tests.unit.agents.support import template

SECRET = "rk-live/5ecr3t+Value-0042"  # a slash and a plus: its percent-encoding differs
API_KEY = "sk-model-key-000111222333"
REVIEWER = (
    "import base64, json, os\n"
    "k = os.environ['REVIEW_KEY']\n"
    "b = base64.b64encode(k.encode()).decode()\n"
    "f = {'file': 'src/db.py', 'line': 42, 'severity': 'high', 'category': 'security',\n"
    "     'message': 'The key is ' + k + ' (or ' + b + ')', 'suggestion': 'Rotate ' + k}\n"
    "open(os.environ['HANGAR_OUTPUT_FILE'], 'w').write(json.dumps({'findings': [f]}))\n"
)


def forms(value: str) -> list[str]:
    raw = value.encode()
    return [value, base64.b64encode(raw).decode(), base64.b64encode(raw + b"\n").decode(), raw.hex()]


async def secret_agents(owner: Any, ws: str) -> None:
    command = {"type": "command", "argv": ["python3", "-c", REVIEWER], "secretEnv": {"REVIEW_KEY": SECRET}}
    await owner.call("agents.create", workspace_id=ws, name="Leaky", adapter=command)
    model = {"type": "openai", "baseUrl": "https://api.openai.com/v1", "model": "m", "apiKey": API_KEY}
    await owner.call("agents.create", workspace_id=ws, name="Keyed", adapter=model)


def sent(gh: Any) -> str:
    return json.dumps(gh.reviews.of("acme/app", PR))


async def test_secrets_in_findings_are_blanked_before_the_review_is_posted(tmp_path: Path) -> None:
    async with forge_server(tmp_path) as (_srv, owner, ws, gh):
        repo = await connect(owner, ws, gh, tmp_path)
        await secret_agents(owner, ws)
        leaked = [*forms(SECRET), quote(SECRET, safe=""), *forms(API_KEY)]
        findings = {
            "verdict": "comment",
            "reviewers": 1,
            "findings": [
                finding(
                    42, f"On the diff: {SECRET}", suggestion=f"Rotate {base64.b64encode(SECRET.encode()).decode()}"
                ),
                finding(300, "Off the diff: " + " / ".join(leaked)),
            ],
        }
        done = await run(owner, ws, template({"id": "comment", "body": "forge.prComment"}, tid="leak"),
                         payload(repo, consolidated_findings=findings))  # fmt: skip
        assert done["status"] == "completed", done
        (review,) = gh.reviews.of("acme/app", PR)
        out = sent(gh)
        for form in leaked:
            assert form not in out, form
        assert "[redacted]" in review["comments"][0]["body"] and "[redacted]" in review["body"]
        progress = step(done, "comment")["progress"]
        assert progress["redacted"] == 2 + len(leaked)
        audit = json.dumps(await owner.call("audit.list", workspace_id=ws))
        assert "forge.prComment.redacted" in audit and SECRET not in audit and API_KEY not in audit


async def test_a_text_review_is_blanked_too(tmp_path: Path) -> None:
    async with forge_server(tmp_path) as (_srv, owner, ws, gh):
        repo = await connect(owner, ws, gh, tmp_path)
        await secret_agents(owner, ws)
        text = f"All fine. {SECRET}"
        done = await run(owner, ws, template({"id": "comment", "body": "forge.prComment"}, tid="text"),
                         payload(repo, consolidated_findings=text))  # fmt: skip
        assert done["status"] == "completed", done
        assert SECRET not in sent(gh) and step(done, "comment")["progress"]["redacted"] == 1
        # Nothing to blank: nothing blanked, no audit row.
        done = await run(owner, ws, template({"id": "comment", "body": "forge.prComment"}, tid="text"),
                         payload(repo, consolidated_findings="All fine."))  # fmt: skip
        assert step(done, "comment")["progress"]["redacted"] == 0


@pytest.mark.packs("terminal")
async def test_a_command_reviewer_echoing_its_secret_does_not_publish_it(tmp_path: Path) -> None:
    """The built-in template with a command agent as the reviewer: it writes its ``secretEnv`` value (and its
    base64) into a finding; the review the forge receives holds neither."""
    async with forge_server(tmp_path) as (_srv, owner, ws, gh):
        repo = await connect(owner, ws, gh, tmp_path)
        command = {"type": "command", "argv": ["python3", "-c", REVIEWER], "secretEnv": {"REVIEW_KEY": SECRET}}
        agent = await owner.call("agents.create", workspace_id=ws, name="Leaky", adapter=command)
        made = await owner.call("forge.reviewTemplate", workspace_id=ws, agentIds=[agent["id"]])
        done = await run(owner, ws, made["template"], payload(repo))
        assert done["status"] == "completed", done
        (review,) = gh.reviews.of("acme/app", PR)
        for form in forms(SECRET):
            assert form not in sent(gh), form
        assert "The key is [redacted] (or [redacted])" in review["comments"][0]["body"]
        # Blanked where the reviewer submitted it: the run's state never held it either.
        assert SECRET not in json.dumps(done)
