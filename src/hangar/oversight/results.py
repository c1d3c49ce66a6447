"""What the core ops answer: domain events, audit rows, guardrail policies, workspace settings."""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, RootModel

from hangar.core.types import Timestamp
from hangar.rpc.frames import frames
from hangar.rpc.registry import Result, omitted_when_none


class EventView(Result):
    """A domain event as stored: its sequence number in the workspace, type and payload (the declared event's
    model; an emitted event's payload as given)."""

    model_config = ConfigDict(json_schema_extra=frames(suffix="View", emitted=True))
    seq: int
    id: str
    type: str
    occurred_at: Timestamp
    payload: dict[str, Any]


class Watching(Result):
    """The first reply of ``events.watch``: the workspace now followed."""

    watching: str


class AuditRow(Result):
    """One audit entry; ``seq`` numbers the entries of its target."""

    at: Timestamp
    principal: str
    action: str
    target: str
    seq: int
    details: dict[str, Any]
    door: str | None = omitted_when_none()  # ``socket`` or ``mcp``: the door of the call that wrote it


class GuardrailPolicy(Result):
    read_only: bool
    ask_first: list[str]


class SettingView(Result):
    """A declared setting: what it is for and its stored value (null while it keeps its default)."""

    summary: str
    value: Any = None


class SettingsView(RootModel[dict[str, SettingView]]):
    """Every declared workspace setting, by key."""


class SettingSaved(Result):
    key: str
    value: Any = None
