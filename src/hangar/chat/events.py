"""Domain events of the chat part. A link made or removed is an event so that every roster watcher, in this
process or another sharing the data directory (the bus tails the workspace's events), pushes the roster again."""

from __future__ import annotations

from hangar.core.event_types import DomainEvent


class UserLinked(DomainEvent):
    type = "chat.userLinked"
    provider: str
    user_id: str
    external_team_id: str
    external_user_id: str
    method: str


class UserUnlinked(DomainEvent):
    type = "chat.userUnlinked"
    provider: str
    user_id: str
    external_team_id: str
    external_user_id: str


CHAT_EVENTS: list[type[DomainEvent]] = [UserLinked, UserUnlinked]
ROSTER_EVENT_TYPES: tuple[str, ...] = (UserLinked.type, UserUnlinked.type)
