"""Ops over the kernel's workspace records: domain events, the audit log, guardrails and settings."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any, Literal

from pydantic import AwareDatetime, Field, StrictBool, model_validator

from hangar.core.event_types import StoredEvent
from hangar.core.part import OpFunction
from hangar.core.settings import WorkspaceSettings
from hangar.oversight.results import (
    AuditRow,
    EventView,
    GuardrailPolicy,
    SettingSaved,
    SettingsView,
    SettingView,
    Watching,
)
from hangar.rpc.context import OpContext
from hangar.rpc.guardrails import WORKSPACE_SCOPE, Guardrails, GuardrailSetting, space_scope
from hangar.rpc.registry import Args, NoArgs, op, to_wire


class TimeWindow(Args):
    """A half-open time window, ``since`` inclusive and ``until`` exclusive; either end may be left open."""

    since: AwareDatetime | None = Field(default=None, description="at or after this time")
    until: AwareDatetime | None = Field(default=None, description="before this time")

    @model_validator(mode="after")
    def _window(self) -> TimeWindow:
        if self.since is not None and self.until is not None and self.until <= self.since:
            raise ValueError("until must be later than since")
        return self


class EventsArgs(TimeWindow):
    after_seq: int = Field(default=0, ge=0, alias="afterSeq")
    types: list[str] | None = None
    limit: int = Field(default=200, ge=1, le=1000)
    last: int | None = Field(default=None, ge=1, le=1000, description="the last events instead of the first")


@op("events.list", kind="read", scope="workspace", min_role="member")
async def events_list(ctx: OpContext, args: EventsArgs) -> list[EventView]:
    """Domain events of the workspace after a sequence number, oldest first: the first ``limit``, or the ``last``;
    optionally only those of some types and those that occurred in a time window. Every space's events are in
    it, so a credential limited to one space is refused."""
    ctx.principal.whole_workspace(ctx.spec.name)
    events = await ctx.app.bus.replay(
        ctx.ws,
        after_seq=args.after_seq,
        types=args.types,
        limit=args.limit,
        last=args.last,
        since=args.since,
        until=args.until,
    )
    return [EventView.model_validate(e) for e in events]


class WatchEventsArgs(Args):
    types: list[str] | None = None


@op("events.watch", kind="watch", scope="workspace", min_role="member", result=Watching, events=EventView)
async def events_watch(ctx: OpContext, args: WatchEventsArgs) -> AsyncIterator[Watching | EventView]:
    """Stream the workspace's domain events as they are published (refused to a credential limited to one
    space, as ``events.list``)."""
    ctx.principal.whole_workspace(ctx.spec.name)
    queue: asyncio.Queue[StoredEvent] = asyncio.Queue()

    async def forward(ev: StoredEvent) -> None:
        queue.put_nowait(ev)

    sub = ctx.app.bus.subscribe(
        forward, name=f"rpc-watch:{ctx.principal.device_id}", types=args.types, workspace_id=ctx.ws
    )
    try:
        yield Watching(watching=ctx.ws)
        while True:
            yield EventView.model_validate(await queue.get())
    finally:
        await ctx.app.bus.unsubscribe(sub)


class AuditArgs(TimeWindow):
    target: str | None = None
    action: str | None = None
    principal: str | None = Field(default=None, description="as rows write it: user:<id> or agent:<id>")
    door: Literal["socket", "mcp", "none"] | None = Field(
        default=None, description="the door of the call that wrote the row; none: work no caller started"
    )
    limit: int = Field(default=200, ge=1, le=1000)
    newest: bool = Field(default=False, description="the last rows that match, newest first")


@op("audit.list", kind="read", scope="workspace", min_role="admin")
async def audit_list(ctx: OpContext, args: AuditArgs) -> list[AuditRow]:
    """Audit rows of the workspace, oldest first (``newest``: newest first), filtered by target, action,
    principal, door and time."""
    entries = await ctx.app.audit.entries(
        ctx.ws,
        target=args.target,
        action=args.action,
        principal=args.principal,
        door=args.door,
        since=args.since,
        until=args.until,
        limit=args.limit,
        newest=args.newest,
    )
    return [
        AuditRow(
            at=e.at,
            principal=e.principal,
            action=e.action,
            target=e.target,
            seq=e.target_seq,
            details=e.details,
            door=e.door,
        )
        for e in entries
    ]


class GuardrailGetArgs(Args):
    space_id: str | None = None


def _policy(s: GuardrailSetting) -> GuardrailPolicy:
    return GuardrailPolicy(read_only=s.read_only, ask_first=sorted(s.ask_first))


@op("guardrails.get", kind="read", scope="workspace")
async def guardrails_get(ctx: OpContext, args: GuardrailGetArgs) -> GuardrailPolicy:
    """The guardrail policy of the workspace, or of one space when ``space_id`` is given."""
    scope = space_scope(args.space_id) if args.space_id else WORKSPACE_SCOPE
    return _policy(await ctx.app.service(Guardrails).get(await ctx.db(), ctx.ws, scope))


class GuardrailSetArgs(Args):
    space_id: str | None = None
    read_only: StrictBool = Field(default=False, alias="readOnly")  # strict: "yes" is not a boolean
    ask_first: list[str] = Field(default_factory=list, alias="askFirst")


@op("guardrails.set", kind="mutate", scope="workspace", min_role="admin", governs_guardrails=True)
async def guardrails_set(ctx: OpContext, args: GuardrailSetArgs) -> GuardrailPolicy:
    """Set read-only mode and the ask-first action classes for the workspace or one space."""
    scope = space_scope(args.space_id) if args.space_id else WORKSPACE_SCOPE
    setting = GuardrailSetting(args.read_only, frozenset(args.ask_first))
    saved = await ctx.app.service(Guardrails).set(await ctx.db(), ctx.ws, scope, setting)
    policy = _policy(saved)
    await ctx.audit("guardrails.set", f"guardrails:{scope}", to_wire(policy))
    return policy


@op("settings.get", kind="read", scope="workspace")
async def settings_get(ctx: OpContext, args: NoArgs) -> SettingsView:
    """The workspace's settings: every declared key with its summary and stored value (null when default)."""
    store = ctx.app.service(WorkspaceSettings)
    stored = await store.all(ctx.ws)
    return SettingsView({k: SettingView(summary=spec.summary, value=stored.get(k)) for k, spec in store.specs.items()})


class SettingSetArgs(Args):
    key: str = Field(min_length=1)
    value: Any = None


@op("settings.set", kind="mutate", scope="workspace", min_role="admin")
async def settings_set(ctx: OpContext, args: SettingSetArgs) -> SettingSaved:
    """Set one workspace setting (validated by the part that declares it); a null value restores the default."""
    saved = await ctx.app.service(WorkspaceSettings).set(ctx.ws, args.key, args.value, by=ctx.principal.label)
    await ctx.audit("settings.set", f"setting:{args.key}", {"value": saved})
    return SettingSaved(key=args.key, value=saved)


OVERSIGHT_OPS: list[OpFunction] = [
    events_list,
    events_watch,
    audit_list,
    guardrails_get,
    guardrails_set,
    settings_get,
    settings_set,
]
