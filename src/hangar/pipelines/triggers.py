"""Triggers: what starts runs of a template, recorded as trigger rows.

- ``manual``: a person or the command line (one row per template, created on first use);
- ``event``: every domain event of ``eventType`` in the workspace that occurs after the trigger was created
  (the event's payload, over the trigger's own payload, becomes the run's payload);
- ``schedule``: a cron expression (UTC), evaluated with ``croniter`` on the injectable clock;
- ``pullRequest``: a pull request of a repo linked to the workspace's forge was opened or pushed to (its head
  moved), by a webhook, a poll or by hand (``hangar.forges``); the run's payload holds ``PULL_REQUEST_STATE_KEYS``
  over the trigger's own payload (``hangar.pipelines.pull_requests`` holds the contract).

A run records the trigger row and the firing (the event id, or the scheduled time); a firing starts at most
one run, so a replayed event or a schedule checked twice never starts a second one. A schedule that was
missed while the server was down fires once for the latest missed slot, not once per slot.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from croniter import croniter

from hangar.core.clock import nap as clock_nap
from hangar.core.ids import new_id
from hangar.core.types import rfc3339
from hangar.errors import InvalidArgs, NotFound
from hangar.pipelines.engine import PipelineEngine
from hangar.pipelines.pull_requests import PULL_REQUEST_EVENT, PULL_REQUEST_TRIGGER
from hangar.pipelines.rows import TriggerRow

log = logging.getLogger(__name__)

TRIGGER_KINDS: tuple[str, ...] = ("manual", "event", "schedule", PULL_REQUEST_TRIGGER)
MAX_SCHEDULER_NAP = 60.0
MIN_SCHEDULER_NAP = 1.0


def check_cron(expr: str) -> None:
    if not isinstance(expr, str) or not croniter.is_valid(expr):
        raise InvalidArgs(f"cron {expr!r} is not a valid cron expression", field="cron")


def next_fire(expr: str, after: datetime) -> datetime:
    """The first slot strictly after ``after`` (UTC)."""
    nxt = croniter(expr, after.astimezone(UTC)).get_next(datetime)
    assert isinstance(nxt, datetime)
    return nxt if nxt.tzinfo is not None else nxt.replace(tzinfo=UTC)


def last_due(expr: str, last: datetime, now: datetime) -> datetime | None:
    """The latest slot after ``last`` that is not after ``now`` (``None`` when no slot is due)."""
    due: datetime | None = None
    slot = next_fire(expr, last)
    # Bounded walk: a schedule down for a long time jumps to the slot before ``now``.
    for _ in range(10_000):
        if slot > now:
            return due
        due = slot
        slot = next_fire(expr, slot)
    prev = croniter(expr, now.astimezone(UTC)).get_prev(datetime)
    assert isinstance(prev, datetime)
    return prev if prev.tzinfo is not None else prev.replace(tzinfo=UTC)


async def create_trigger(
    engine: PipelineEngine,
    ws: str,
    *,
    template_id: str,
    kind: str,
    event_type: str | None = None,
    cron: str | None = None,
    payload: Mapping[str, Any] | None = None,
    by: str | None = None,
) -> TriggerRow:
    if kind not in TRIGGER_KINDS:
        raise InvalidArgs(f"kind must be one of {', '.join(TRIGGER_KINDS)}, not {kind!r}", field="kind")
    await engine.stored_template(ws, template_id)  # NotFound when missing, invalid when it no longer loads
    now = engine.clock.now()
    next_at: datetime | None = None
    if kind == "event":
        if not event_type:
            raise InvalidArgs("an event trigger needs eventType", field="eventType")
    elif kind == PULL_REQUEST_TRIGGER:
        if event_type:
            raise InvalidArgs("a pullRequest trigger fires on pull requests: it takes no eventType", field="eventType")
        event_type = PULL_REQUEST_EVENT
    elif event_type:
        raise InvalidArgs("eventType only applies to event triggers", field="eventType")
    if kind == "schedule":
        if not cron:
            raise InvalidArgs("a schedule trigger needs cron", field="cron")
        check_cron(cron)
        next_at = next_fire(cron, now)
    elif cron:
        raise InvalidArgs("cron only applies to schedule triggers", field="cron")
    row = TriggerRow(
        id=new_id(),
        template_id=template_id,
        kind=kind,
        event_type=event_type,
        cron=cron,
        payload=dict(payload or {}),
        enabled=True,
        last_fired_at=None,
        next_fire_at=next_at,
        created_at=now,
    )
    await engine.store.insert_trigger(ws, row, by=by)
    return row


async def manual_trigger_id(
    engine: PipelineEngine, ws: str, template_id: str, *, by: str | None = None, stored: bool = True
) -> str:
    """The template's manual trigger row, created on first use. ``stored=False`` is for templates run from a
    file (``hangar pipeline run``), which need not be stored in the workspace to have their runs recorded."""
    found = await engine.store.list_triggers(ws, template_id=template_id, kind="manual")
    if found:
        return found[0].id
    if stored:
        return (await create_trigger(engine, ws, template_id=template_id, kind="manual", by=by)).id
    row = TriggerRow(
        id=new_id(),
        template_id=template_id,
        kind="manual",
        event_type=None,
        cron=None,
        payload={},
        enabled=True,
        last_fired_at=None,
        next_fire_at=None,
        created_at=engine.clock.now(),
    )
    await engine.store.insert_trigger(ws, row, by=by)
    return row.id


async def fire_due_schedules(engine: PipelineEngine, ws: str) -> list[str]:
    """Start a run for every schedule trigger whose slot has come; returns the runs started."""
    now = engine.clock.now()
    started: list[str] = []
    for trig in await engine.store.list_triggers(ws, kind="schedule"):
        if not trig.enabled or trig.cron is None:
            continue
        if trig.next_fire_at is not None and trig.next_fire_at > now:
            continue
        slot = last_due(trig.cron, trig.last_fired_at or trig.created_at, now)
        if slot is None:
            await engine.store.set_trigger_times(
                ws, trig.id, last_fired_at=trig.last_fired_at, next_fire_at=next_fire(trig.cron, now)
            )
            continue
        try:
            template = await engine.stored_template(ws, trig.template_id)
        except (NotFound, InvalidArgs) as exc:
            log.warning("schedule trigger %s cannot start %s: %s", trig.id, trig.template_id, exc)
            template = None
        if template is not None:
            run_id = await engine.start_run(
                ws,
                template,
                payload={**trig.payload, "scheduledAt": rfc3339(slot)},
                trigger_kind="schedule",
                trigger_id=trig.id,
                trigger_key=slot.isoformat(),
            )
            if run_id is not None:
                started.append(run_id)
        await engine.store.set_trigger_times(ws, trig.id, last_fired_at=slot, next_fire_at=next_fire(trig.cron, slot))
    return started


async def next_wake(engine: PipelineEngine, ws: str) -> datetime | None:
    """The earliest schedule slot or suspension deadline of a workspace."""
    times = [t.next_fire_at for t in await engine.store.list_triggers(ws, kind="schedule") if t.enabled]
    times.append(await engine.store.next_deadline(ws))
    known = [t for t in times if t is not None]
    return min(known) if known else None


class Scheduler:
    """Fires schedule triggers and times out long suspensions, sleeping on the engine's clock in between."""

    def __init__(
        self,
        engine: PipelineEngine,
        workspaces: Callable[[], Awaitable[list[str]]],
        *,
        on_pass: Callable[[str], Awaitable[None]] | None = None,
    ) -> None:
        self._engine = engine
        self._workspaces = workspaces
        self._on_pass = on_pass
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop(), name="pipelines-scheduler")

    def poke(self) -> None:
        """Look again now (a trigger was added or changed)."""
        self._wake.set()

    async def tick(self) -> datetime | None:
        """One pass over every workspace; returns when the next pass is due."""
        soonest: datetime | None = None
        for ws in await self._workspaces():
            try:
                if self._on_pass is not None:
                    await self._on_pass(ws)
                await fire_due_schedules(self._engine, ws)
                await self._engine.expire_suspensions(ws)
                nxt = await next_wake(self._engine, ws)
            except Exception:
                log.exception("pipelines scheduler failed on workspace %s", ws)
                continue
            if nxt is not None and (soonest is None or nxt < soonest):
                soonest = nxt
        return soonest

    async def _loop(self) -> None:
        clock = self._engine.clock
        while True:
            self._wake.clear()
            soonest = await self.tick()
            nap = MAX_SCHEDULER_NAP
            if soonest is not None:
                nap = min(nap, max(MIN_SCHEDULER_NAP, (soonest - clock.now()) / timedelta(seconds=1)))
            await clock_nap(clock, nap, self._wake)

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
