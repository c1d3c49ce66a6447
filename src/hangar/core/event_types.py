"""The event types: the base of every domain event, an event as stored, and the registry of the types the server
knows (each part registers its own), with the rules for the types people and scripts emit.

Kept apart from the bus (``hangar.core.events``), which persists and delivers them.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from hangar.errors import InvalidArgs, Refused

log = logging.getLogger("hangar.core.events")


def _where(exc: ValidationError) -> str:
    """Which fields failed and why, never the values given (a payload may carry what no log should keep)."""
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or 'payload'}: {e['msg']}" for e in exc.errors(include_input=False)
    )


class DomainEvent(BaseModel):
    """Base of every domain event. Subclasses set ``type`` (a stable wire name) and add typed fields.

    The payload is the event's fields without ``workspace_id`` (the workspace holds the event), camelCase as every
    other field on the wire and as written to the database. Fields are snake_case in Python; both spellings are
    read back, because events recorded before the payload went camelCase are stored in snake_case (``parse``,
    ``EventRegistry.wire_payload``). Every field is always sent, defaults included."""

    # Each event model's validator is built when the event is first made or read, not at import (start-up time).
    model_config = ConfigDict(
        defer_build=True,
        frozen=True,
        extra="forbid",
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        json_schema_serialization_defaults_required=True,
    )
    type: ClassVar[str] = ""
    workspace_id: str = Field(exclude=True)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not cls.__dict__.get("type"):
            raise TypeError(f"{cls.__name__} must set the class variable `type`")

    def payload(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)


@dataclass(frozen=True)
class StoredEvent:
    """An event as persisted: its workspace, its sequence number there, and its payload."""

    workspace_id: str
    seq: int
    id: str
    type: str
    occurred_at: datetime
    payload: dict[str, Any]

    def parse(self, registry: EventRegistry) -> DomainEvent | None:
        return registry.parse(self.type, self.workspace_id, self.payload)


# First segments of the server's own event types, refused for emitted events even when the process that
# emits composes fewer parts than the server (the command line).
RESERVED_NAMESPACES = frozenset(
    {"agents", "audit", "chat", "core", "events", "forge", "forges", "guardrails", "hangar", "identity", "pipeline",
     "pipelines", "rig", "rigs", "server", "sso", "workspace"}
)  # fmt: skip
USER_EVENT_TYPE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*(\.[A-Za-z0-9_-]+)+$")


class EventRegistry:
    """The event classes the server knows, registered explicitly by each part."""

    def __init__(self, classes: Iterable[type[DomainEvent]] = ()) -> None:
        self._by_type: dict[str, type[DomainEvent]] = {}
        for cls in classes:
            self.register(cls)

    def register(self, cls: type[DomainEvent]) -> None:
        known = self._by_type.get(cls.type)
        if known is not None and known is not cls:
            raise ValueError(f"event type {cls.type!r} is registered twice ({known.__name__}, {cls.__name__})")
        self._by_type[cls.type] = cls

    def get(self, type_name: str) -> type[DomainEvent] | None:
        return self._by_type.get(type_name)

    def parse(self, type_name: str, workspace_id: str, payload: dict[str, Any]) -> DomainEvent | None:
        """The event a stored payload records (camelCase, or snake_case as events recorded before were), or None
        for a type no part declares (an event people or scripts emitted)."""
        cls = self._by_type.get(type_name)
        if cls is None:
            return None
        return cls.model_validate({**payload, "workspace_id": workspace_id})

    def wire_payload(self, type_name: str, workspace_id: str, payload: dict[str, Any]) -> dict[str, Any]:
        """A stored payload in its wire form: a declared type's in camelCase whichever way it was stored; an
        emitted event's as it was given. A stored row its model no longer reads is handed over as stored (and
        logged) rather than lost."""
        try:
            event = self.parse(type_name, workspace_id, payload)
        except ValidationError as exc:
            log.warning("a stored %s event does not match its model: %s", type_name, _where(exc))
            return payload
        return payload if event is None else event.payload()

    def checked_payload(self, type_name: str, payload: dict[str, Any]) -> dict[str, Any]:
        """``payload`` for an event published by wire name: a declared type's must validate against its model
        (else ``ValueError``, naming the type and the field), and goes out in wire form."""
        cls = self._by_type.get(type_name)
        if cls is None:
            return payload
        try:
            return cls.model_validate({**payload, "workspace_id": ""}).payload()
        except ValidationError as exc:
            raise ValueError(f"the payload of {type_name} does not match {cls.__name__}: {_where(exc)}") from exc

    def classes(self) -> list[type[DomainEvent]]:
        return [self._by_type[t] for t in self.types]

    @property
    def types(self) -> list[str]:
        return sorted(self._by_type)

    def check_user_type(self, type_name: str, field: str = "eventType") -> None:
        """Events people and scripts emit (``pipelines.emit``) live in their own namespace: a type that is,
        or shares its first segment with, a type some part records (``workspace.``, ``pipeline.``...) is
        refused, so nobody can forge a message, a finished task or a removed member."""
        if not isinstance(type_name, str) or len(type_name) > 128 or not USER_EVENT_TYPE.match(type_name):
            raise InvalidArgs(
                f"{field} must be dotted words like review.approved (letters, digits, _ and -; at most 128)",
                field=field,
            )
        namespace = type_name.split(".", 1)[0]
        system = RESERVED_NAMESPACES | {t.split(".", 1)[0] for t in self._by_type}
        if namespace in system:
            raise Refused(
                f"{type_name} is in the {namespace!r} namespace, which the server's own events use; "
                "emit events under a namespace of your own (e.g. review.approved)"
            )
