"""Envelope normalization: what reaches the bridge, what is dropped, and the event id dedupe window."""

from __future__ import annotations

from typing import Any

import pytest

from hangar.chat.inbound import InboundMessage
from hangar.chat.providers.slack.events import DEDUPE_WINDOW, EventReader, slash_command

BOT = "U0BOT"


def callback(event_id: str, **event: Any) -> dict[str, Any]:
    base = {"channel": "C1", "user": "U0ALICE", "text": "hi", "ts": "10.1"}
    return {"team_id": "T1", "event_id": event_id, "type": "event_callback", "event": base | event}


def test_mention_message_and_dm_are_kinds() -> None:
    reader = EventReader(BOT)
    mention = reader.message(callback("E1", type="app_mention", text=f"<@{BOT}> go", thread_ts="9.9"))
    assert mention == InboundMessage("E1", "mention", "T1", "C1", "10.1", "9.9", "U0ALICE", f"<@{BOT}> go")
    plain = reader.message(callback("E2", type="message", channel_type="channel"))
    assert plain is not None and (plain.kind, plain.thread_ts) == ("message", None)
    private = reader.message(callback("E3", type="message", channel_type="group", channel="G1"))
    assert private is not None and private.kind == "message"
    dm = reader.message(callback("E4", type="message", channel_type="im", channel="D1", text=f"<@{BOT}> hi"))
    assert dm is not None and dm.kind == "dm"  # a DM naming the bot is still the DM: no app_mention twin there


@pytest.mark.parametrize(
    "event",
    [
        {"type": "message", "channel_type": "channel", "text": f"hey <@{BOT}> look"},  # the twin of a mention
        {"type": "message", "channel_type": "channel", "bot_id": "B9"},
        {"type": "app_mention", "bot_id": "B9"},
        {"type": "message", "channel_type": "channel", "user": BOT},
        {"type": "message", "channel_type": "channel", "subtype": "message_changed"},
        {"type": "message", "channel_type": "channel", "subtype": "message_deleted"},
        {"type": "message", "channel_type": "channel", "subtype": "channel_join"},
        {"type": "message", "channel_type": "im", "subtype": "bot_message"},
        {"type": "reaction_added"},
        {"type": "message", "channel_type": "channel", "user": ""},
    ],
)
def test_dropped(event: dict[str, Any]) -> None:
    assert EventReader(BOT).message(callback("E1", **event)) is None


def test_a_person_writing_with_a_human_subtype_is_kept() -> None:
    reader = EventReader(BOT)
    shared = reader.message(callback("E1", type="message", channel_type="channel", subtype="file_share"))
    assert shared is not None and shared.kind == "message"


def test_team_falls_back_to_the_event() -> None:
    payload = callback("E1", type="app_mention", team="T2")
    del payload["team_id"]
    got = EventReader(BOT).message(payload)
    assert got is not None and got.team_id == "T2"


def test_dedupe_remembers_the_last_512() -> None:
    reader = EventReader(BOT)
    first = callback("E0", type="app_mention")
    assert reader.message(first) is not None
    assert reader.message(first) is None  # a redelivery
    for n in range(1, DEDUPE_WINDOW):
        assert reader.message(callback(f"E{n}", type="app_mention")) is not None
    assert reader.message(first) is None  # still inside the window (and refreshed)
    assert reader.message(callback("E1", type="app_mention")) is None
    reader.message(callback("E-new", type="app_mention"))  # pushes out the oldest: E2
    assert reader.message(callback("E2", type="app_mention")) is not None
    dropped_ones_count = callback("E-twin", type="message", channel_type="channel", text=f"<@{BOT}>")
    assert reader.message(dropped_ones_count) is None and reader.seen_before("E-twin")


def test_slash_command() -> None:
    payload = {"command": "/hangar", "text": "  link ab12cd ", "user_id": "U1", "team_id": "T1", "channel_id": "C1"}
    command = slash_command("env-1", payload)
    assert command is not None and (command.command, command.text, command.envelope_id) == (
        "/hangar",
        "link ab12cd",
        "env-1",
    )
    assert slash_command("env-1", {"text": "x", "user_id": "U1"}) is None
    assert slash_command("", payload) is None
