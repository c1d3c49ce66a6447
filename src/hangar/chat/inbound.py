"""The provider-neutral events the transport hands the bridge.

The transport has already dropped what is not for us (bot messages, edits, our own posts) and the twin of a
mention (a channel mention arrives as ``app_mention`` and as ``message``; only the mention is kept). Whether a
plain channel message continues a bridged thread is the bridge's call: only it knows the bridged threads.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any, Literal

MessageKind = Literal["mention", "message", "dm"]


@dataclass(frozen=True, slots=True)
class InboundMessage:
    """A person wrote: a mention of the bot, a channel message, or a direct message to the bot."""

    event_id: str  # the provider's event id: deduplication key
    kind: MessageKind
    team_id: str  # T..., "" where the provider has no such concept
    channel_id: str  # C..., G... or D...
    ts: str  # this message's id
    thread_ts: str | None  # the thread it is in; None for a top-level message
    user_id: str  # U...
    text: str  # as written, the bot's own mention included


@dataclass(frozen=True, slots=True)
class SlashCommand:
    """``/<command> <text>`` typed by a person; answered ephemerally."""

    envelope_id: str
    team_id: str
    channel_id: str
    user_id: str
    command: str  # as invoked, with its slash: "/hangar"
    text: str


InboundEvent = InboundMessage | SlashCommand


def event_text(event: InboundEvent) -> str:
    """``event`` as text to keep until it is handled (``event_from_text`` reads it back)."""
    return json.dumps({"type": "command" if isinstance(event, SlashCommand) else "message", **asdict(event)})


def event_from_text(text: str) -> InboundEvent:
    fields: dict[str, Any] = json.loads(text)
    kind = fields.pop("type")
    return SlashCommand(**fields) if kind == "command" else InboundMessage(**fields)
