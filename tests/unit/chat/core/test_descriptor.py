"""The descriptor's credential check: what is stored from a submission, and how a wrong value is refused."""

from __future__ import annotations

import pytest

from hangar.chat.descriptor import SLACK, descriptor_for, validate_credentials
from hangar.errors import InvalidArgs

BOT = "xoxb-1-abc"
APP = "xapp-1-A1-def"


def test_values_are_trimmed_and_undeclared_keys_dropped() -> None:
    got = validate_credentials(SLACK, {"botToken": f"  {BOT}\n", "appToken": APP, "signingSecret": "s", "x": 1})
    assert got == {"botToken": BOT, "appToken": APP}


@pytest.mark.parametrize(
    ("field", "value", "sentence"),
    [
        ("botToken", "xoxp-user-token", "Bot user OAuth token must start with xoxb-"),
        ("appToken", "xoxb-not-an-app-token", "App-level token must start with xapp-"),
        ("configRefreshToken", "zz-secret-42", "App configuration refresh token must start with xoxe"),
    ],
)
def test_a_wrong_prefix_is_refused_with_the_descriptors_sentence_and_never_echoed(
    field: str, value: str, sentence: str
) -> None:
    raw = {"botToken": BOT, "appToken": APP, field: value}
    with pytest.raises(InvalidArgs) as err:
        validate_credentials(SLACK, raw)
    assert sentence in err.value.message
    assert SLACK.field(field) is not None and SLACK.field(field).refusal == sentence  # type: ignore[union-attr]
    assert value not in err.value.message and err.value.field == f"credentials.{field}"


@pytest.mark.parametrize("missing", ["botToken", "appToken"])
def test_required_fields_are_needed_on_every_connect(missing: str) -> None:
    raw = {"botToken": BOT, "appToken": APP, missing: "   "}
    stored = {"botToken": "xoxb-old", "appToken": "xapp-old"}
    with pytest.raises(InvalidArgs) as err:
        validate_credentials(SLACK, raw, stored)
    assert "is required" in err.value.message and err.value.field == f"credentials.{missing}"


def test_an_optional_field_left_empty_keeps_the_stored_value() -> None:
    stored = {"botToken": "xoxb-old", "appToken": "xapp-old", "configRefreshToken": "xoxe-1-old"}
    got = validate_credentials(SLACK, {"botToken": BOT, "appToken": APP, "configRefreshToken": " "}, stored)
    assert got == {"botToken": BOT, "appToken": APP, "configRefreshToken": "xoxe-1-old"}
    fresh = validate_credentials(SLACK, {"botToken": BOT, "appToken": APP, "configRefreshToken": "xoxe-1-new"}, stored)
    assert fresh["configRefreshToken"] == "xoxe-1-new"
    assert "configRefreshToken" not in validate_credentials(SLACK, {"botToken": BOT, "appToken": APP})


def test_a_value_that_is_not_text_is_refused() -> None:
    with pytest.raises(InvalidArgs, match="must be text"):
        validate_credentials(SLACK, {"botToken": ["xoxb-1"], "appToken": APP})


def test_the_descriptor_declares_the_specs_capabilities_scopes_and_events() -> None:
    caps = SLACK.capabilities
    assert (caps.max_message_length, caps.max_stream_chunk_length) == (39_000, 3_800)
    assert all([caps.streaming, caps.streaming_requires_thread, caps.ephemeral_messages, caps.thread_status])
    assert all([caps.thread_title, caps.slash_commands, caps.task_cards])
    assert "users:read.email" in SLACK.bot_scopes and len(SLACK.bot_scopes) == 9
    assert set(SLACK.bot_events) == {
        "app_home_opened",
        "app_mention",
        "message.channels",
        "message.groups",
        "message.im",
    }
    assert [f.id for f in SLACK.fields if f.required] == ["botToken", "appToken"]
    with pytest.raises(InvalidArgs, match="provider must be one of chatprovider"):
        descriptor_for("teams")
