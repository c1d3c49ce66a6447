"""Socket Mode envelopes to the bridge's provider-neutral events (``hangar.chat.inbound``).

Kept: ``app_mention`` -> ``mention``; ``message`` in a DM with the bot (``message.im``) -> ``dm``; ``message`` in a
channel or private channel -> ``message``. Dropped: the twin of a mention (Slack sends a channel mention both as
``app_mention`` and as ``message``; the ``message`` one holds ``<@BOT>``), anything a bot wrote (``bot_id``, or
our own bot user), and every ``subtype`` except the two a person writes (edits, deletes, joins, topic changes
are not requests). Redeliveries (Slack resends an event it thinks went unacknowledged) are dropped by remembering
the last ``DEDUPE_WINDOW`` event ids.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from hangar.chat.inbound import InboundMessage, MessageKind, SlashCommand

DEDUPE_WINDOW = 512

# Subtypes that are still a person writing: a thread reply also sent to the channel, a message with a file.
HUMAN_SUBTYPES = frozenset({"thread_broadcast", "file_share"})


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


class EventReader:
    """Reads one workspace's envelopes for the bot ``bot_user_id``; keeps the dedupe window."""

    def __init__(self, bot_user_id: str, *, window: int = DEDUPE_WINDOW) -> None:
        self.bot_user_id = bot_user_id
        self._window = window
        self._seen: OrderedDict[str, None] = OrderedDict()

    def seen_before(self, event_id: str) -> bool:
        """True when ``event_id`` was read already; remembers it otherwise (the oldest falls out)."""
        if event_id in self._seen:
            self._seen.move_to_end(event_id)
            return True
        self._seen[event_id] = None
        if len(self._seen) > self._window:
            self._seen.popitem(last=False)
        return False

    def message(self, payload: Mapping[str, Any]) -> InboundMessage | None:
        """The ``events_api`` envelope's payload (an event callback) as a message for the bridge, or None."""
        event = payload.get("event")
        event_id = _str(payload.get("event_id"))
        if not isinstance(event, Mapping) or not event_id or self.seen_before(event_id):
            return None
        kind = self._kind(event)
        if kind is None:
            return None
        channel, ts, user = _str(event.get("channel")), _str(event.get("ts")), _str(event.get("user"))
        if not (channel and ts and user):
            return None
        return InboundMessage(
            event_id=event_id,
            kind=kind,
            team_id=_str(payload.get("team_id")) or _str(event.get("team")),
            channel_id=channel,
            ts=ts,
            thread_ts=_str(event.get("thread_ts")) or None,
            user_id=user,
            text=_str(event.get("text")),
        )

    def _kind(self, event: Mapping[str, Any]) -> MessageKind | None:
        if event.get("bot_id") or event.get("bot_profile") or event.get("user") == self.bot_user_id:
            return None
        subtype = event.get("subtype")
        if subtype is not None and subtype not in HUMAN_SUBTYPES:
            return None
        match event.get("type"):
            case "app_mention":
                return "mention"
            case "message" if event.get("channel_type") == "im":
                return "dm"
            case "message":
                if self.bot_user_id and f"<@{self.bot_user_id}>" in _str(event.get("text")):
                    return None  # the twin of an app_mention, which carries the request
                return "message"
        return None


def slash_command(envelope_id: str, payload: Mapping[str, Any]) -> SlashCommand | None:
    """A ``slash_commands`` envelope's payload, or None when it lacks what an answer needs."""
    command, user = _str(payload.get("command")), _str(payload.get("user_id"))
    if not envelope_id or not command or not user:
        return None
    return SlashCommand(
        envelope_id=envelope_id,
        team_id=_str(payload.get("team_id")),
        channel_id=_str(payload.get("channel_id")),
        user_id=user,
        command=command,
        text=_str(payload.get("text")).strip(),
    )
