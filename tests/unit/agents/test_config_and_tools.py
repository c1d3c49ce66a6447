"""Adapter settings parsing, the built-in tools' confinement, ``submit_output`` and the model conversation."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from hangar.agents.adapters.base import HistoryMessage, RunRequest
from hangar.agents.adapters.openai import initial_messages
from hangar.agents.config import CommandAdapter, OpenAIAdapter, check_role, parse_adapter, stored_adapter
from hangar.agents.service import Agent
from hangar.agents.tools.builtin import READ_LIMIT, OutputHolder, RunToolbox
from hangar.agents.tools.output_schema import as_tool_parameters, check_schema, violation
from hangar.errors import InvalidArgs


@pytest.mark.parametrize(
    ("raw", "field", "needle"),
    [
        ({"type": "openai", "baseUrl": "localhost:8000", "model": "m"}, "adapter.baseUrl", "http://"),
        ({"type": "openai", "baseUrl": "http://x/v1"}, "adapter.model", "Field required"),
        ({"type": "openai", "baseUrl": "http://x", "model": "m", "maxTurns": 0}, "adapter.maxTurns", "greater"),
        ({"type": "openai", "baseUrl": "http://x", "model": "m", "tools": ["shell"]}, "adapter.tools", "shell"),
        ({"type": "openai", "baseUrl": "http://x", "model": "m", "colour": 1}, "adapter.colour", "Extra"),
        ({"type": "command", "argv": []}, "adapter.argv", "at least 1"),
        ({"type": "command", "argv": ["x"], "promptVia": "file"}, "adapter.promptVia", "stdin"),
        ({"type": "smoke"}, "adapter.type", "'openai' or 'command'"),
        ({}, "adapter.type", "'openai' or 'command'"),
    ],
)
def test_bad_adapter_settings_name_the_field(raw: dict[str, Any], field: str, needle: str) -> None:
    with pytest.raises(InvalidArgs) as err:
        parse_adapter(raw)
    assert err.value.field == field and needle in err.value.message


def test_adapter_settings_round_trip_without_the_key() -> None:
    cfg = parse_adapter({"type": "openai", "baseUrl": "http://h:1/v1/", "model": "m", "apiKey": "sk-1"})
    assert isinstance(cfg, OpenAIAdapter) and cfg.base_url == "http://h:1/v1" and cfg.api_key == "sk-1"
    stored = stored_adapter(cfg)
    assert "apiKey" not in stored and stored["baseUrl"] == "http://h:1/v1" and stored["maxTurns"] == 20
    assert parse_adapter(stored) == cfg.model_copy(update={"api_key": None})
    cmd = parse_adapter({"type": "command", "argv": ["aider", "--yes"], "prompt_via": "arg"})
    assert isinstance(cmd, CommandAdapter) and cmd.prompt_via == "arg"
    assert check_role("chiefExecutive") == "chiefExecutive"
    with pytest.raises(InvalidArgs):
        check_role("ceo")


def test_schema_checks_and_tool_parameters() -> None:
    with pytest.raises(InvalidArgs) as err:
        check_schema({"type": "object", "$ref": "#/x"})
    assert "$ref" in err.value.message and err.value.field == "outputSchema"
    with pytest.raises(InvalidArgs):
        check_schema(["not", "a", "schema"])
    obj = {"type": "object", "properties": {"a": {"type": "string"}}}
    assert as_tool_parameters(obj) == (obj, False)
    params, wrapped = as_tool_parameters({"type": "array"})
    assert wrapped and params["required"] == ["output"] and params["properties"]["output"] == {"type": "array"}


def _toolbox(folder: Path, schema: dict[str, Any] | None = None) -> tuple[RunToolbox, OutputHolder, list[str]]:
    posted: list[str] = []

    async def post(content: str) -> None:
        posted.append(content)

    holder = OutputHolder(schema)
    box = RunToolbox(enabled=("post_message", "list_files", "read_file"), folder=folder, output=holder, post=post)
    return box, holder, posted


async def test_files_tools_stay_inside_the_working_folder(tmp_path: Path) -> None:
    folder = tmp_path / "space"
    (folder / "src").mkdir(parents=True)
    (folder / "src" / "a.py").write_text("print(1)\n")
    (folder / "big.txt").write_text("x" * (READ_LIMIT + 10))
    (tmp_path / "secret.txt").write_text("nope")
    os.symlink(tmp_path / "secret.txt", folder / "link.txt")
    box, _, posted = _toolbox(folder)

    listing = await box.call("list_files", {})
    assert listing.ok and listing.content.splitlines() == ["big.txt", "link.txt", "src/"]
    assert (await box.call("list_files", {"path": "src"})).content == "src/a.py"
    assert (await box.call("read_file", {"path": "src/a.py"})).content == "print(1)\n"
    big = await box.call("read_file", {"path": "big.txt"})
    assert big.content.endswith("… (truncated)") and len(big.content) < READ_LIMIT + 20
    for path in ("../secret.txt", "/etc/passwd", "link.txt", "src/../../secret.txt"):
        res = await box.call("read_file", {"path": path})
        assert not res.ok and "outside your working folder" in res.content, path
    assert not (await box.call("read_file", {"path": "src"})).ok
    assert not (await box.call("read_file", {"path": 3})).ok
    assert (await box.call("post_message", {"content": "hi"})).content == "posted" and posted == ["hi"]
    assert not (await box.call("post_message", {"content": " "})).ok
    unknown = await box.call("rm_rf", {})
    assert not unknown.ok and "no tool named 'rm_rf'" in unknown.content
    assert not (await box.call("submit_output", {"x": 1})).ok  # not offered without a schema
    assert [t["function"]["name"] for t in box.specs()] == ["post_message", "list_files", "read_file"]


async def test_submit_output_validates_and_unwraps(tmp_path: Path) -> None:
    box, holder, _ = _toolbox(tmp_path, {"type": "array", "items": {"type": "integer"}})
    assert box.specs()[-1]["function"]["parameters"]["properties"]["output"]["type"] == "array"
    refused = await box.call("submit_output", {"output": [1, "2"]})
    assert not refused.ok and not refused.ends_run and "$[1]: expected integer, got string" in refused.content
    assert holder.last_error == "$[1]: expected integer, got string" and not holder.accepted
    accepted = await box.call("submit_output", {"output": [1, 2]})
    assert accepted.ok and accepted.ends_run and holder.value == [1, 2] and holder.last_error is None


def _agent(system_prompt: str = "Be brief.") -> Agent:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    cfg = parse_adapter({"type": "openai", "baseUrl": "http://x", "model": "m"})
    return Agent("a1", "Ada", "member", system_prompt, cfg, False, now, now)


def test_conversation_sent_to_the_model(tmp_path: Path) -> None:
    history = (
        HistoryMessage("user", "Sam", "Hello", own=False),
        HistoryMessage("agent", "Ada", "Hi Sam", own=True),
        HistoryMessage("agent", "Bob", "I disagree", own=False),
    )
    req = RunRequest("ws", "r1", "s1", _agent(), "Now what?", history, tmp_path, {"type": "object"}, 5, None)
    msgs = initial_messages(req)
    assert msgs[0]["role"] == "system" and msgs[0]["content"].startswith("Be brief.")
    assert "submit_output" in msgs[0]["content"]
    assert msgs[1:] == [
        {"role": "user", "content": "Hello"},
        {"role": "assistant", "content": "Hi Sam"},
        {"role": "user", "content": "[Bob] I disagree"},
        {"role": "user", "content": "Now what?"},
    ]
    plain = initial_messages(RunRequest("ws", "r1", "s1", _agent(""), "Go", (), tmp_path, None, 5, None))
    assert "submit_output" not in plain[0]["content"] and plain[-1] == {"role": "user", "content": "Go"}


def test_violation_names_the_path_inside_the_payload() -> None:
    schema = check_schema({"type": "object", "properties": {"items": {"type": "array", "items": {"maxLength": 3}}}})
    assert violation(schema, {"items": ["ok", "too long"]}) == "$.items[1]: longer than 3 characters"
    assert violation(schema, {"items": ["ok"]}) is None
