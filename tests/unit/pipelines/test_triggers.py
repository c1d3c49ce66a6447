"""Cron arithmetic and schedule firing on a fake clock (no server: the engine and store directly)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import pytest

from hangar.core.clock import FakeClock
from hangar.errors import InvalidArgs
from hangar.pipelines import template as tpl
from hangar.pipelines import triggers
from tests.unit.pipelines.harness import WS, harness, listen, steps


def at(h: int, m: int) -> datetime:
    return datetime(2026, 1, 1, h, m, tzinfo=UTC)


def test_next_and_last_due() -> None:
    assert triggers.next_fire("*/15 * * * *", at(0, 0)) == at(0, 15)
    assert triggers.next_fire("*/15 * * * *", at(0, 7)) == at(0, 15)
    assert triggers.last_due("*/15 * * * *", at(0, 0), at(0, 14)) is None
    assert triggers.last_due("*/15 * * * *", at(0, 0), at(0, 15)) == at(0, 15)
    # Slots missed while down: only the latest one is due.
    assert triggers.last_due("*/15 * * * *", at(0, 0), at(2, 3)) == at(2, 0)


def test_bad_cron_is_refused_naming_the_field() -> None:
    with pytest.raises(InvalidArgs, match="not a valid cron expression") as info:
        triggers.check_cron("61 * * * *")
    assert info.value.field == "cron"


async def test_schedule_fires_once_per_slot_and_scheduler_sleeps_on_the_clock(tmp_path: Path) -> None:
    clock = FakeClock(at(0, 0))
    async with harness(tmp_path, clock=clock) as h:
        raw = steps(listen("s", "start", body="shell.run", script="echo {{scheduledAt}}", outputKey="when"), tid="cron")
        wire = tpl.load(raw, h.engine.bodies).template.to_wire()
        await h.engine.store.insert_template(WS, wire, by=None, now=clock.now())
        trig = await triggers.create_trigger(h.engine, WS, template_id="cron", kind="schedule", cron="0 * * * *")
        assert trig.next_fire_at == at(1, 0)
        with pytest.raises(InvalidArgs, match="needs eventType"):
            await triggers.create_trigger(h.engine, WS, template_id="cron", kind="event")

        async def workspaces() -> list[str]:
            return [WS]

        sched = triggers.Scheduler(h.engine, workspaces)
        sched.start()
        try:
            await asyncio.sleep(0.2)
            assert await h.engine.store.list_runs(WS) == []
            clock.advance(3600)  # 01:00
            for _ in range(100):
                runs = await h.engine.store.list_runs(WS)
                if runs:
                    break
                await asyncio.sleep(0.02)
            await h.engine.settle()
            (run,) = await h.engine.store.list_runs(WS)
            assert run.trigger_kind == "schedule" and run.trigger_key == at(1, 0).isoformat()
            snap = await h.engine.snapshot(WS, run.id)
            assert snap["state"]["when"] == "2026-01-01T01:00:00Z"
            # Checking again in the same slot starts nothing new.
            assert await triggers.fire_due_schedules(h.engine, WS) == []
            clock.advance(3 * 3600 + 60)  # 04:01, slots 02:00..04:00 missed: one run, for 04:00
            for _ in range(100):
                if len(await h.engine.store.list_runs(WS)) == 2:
                    break
                await asyncio.sleep(0.02)
            await h.engine.settle()
            runs = await h.engine.store.list_runs(WS)
            assert sorted(r.trigger_key or "" for r in runs) == [at(1, 0).isoformat(), at(4, 0).isoformat()]
        finally:
            await sched.aclose()


async def test_event_trigger_ignores_events_from_before_it_existed(tmp_path: Path) -> None:
    clock = FakeClock(at(0, 0))
    async with harness(tmp_path, clock=clock) as h:
        wire = tpl.load(steps(tid="ev"), h.engine.bodies).template.to_wire()
        await h.engine.store.insert_template(WS, wire, by=None, now=clock.now())
        old = await h.bus.publish_raw(WS, "thing.happened", {"n": 0})
        clock.advance(60)
        await triggers.create_trigger(h.engine, WS, template_id="ev", kind="event", event_type="thing.happened")
        assert await h.engine.on_event(old) == []
        new = await h.bus.publish_raw(WS, "thing.happened", {"n": 1})
        (run_id,) = await h.engine.on_event(new)
        # Delivered twice (a replay after a restart): still one run.
        assert await h.engine.on_event(new) == []
        await h.engine.settle()
        assert (await h.engine.snapshot(WS, run_id))["status"] == "completed"


async def test_pull_request_trigger_starts_one_run_per_head(tmp_path: Path) -> None:
    """The pullRequest trigger's contract: the forges part's event starts a run whose payload has the pull
    request's state keys; the same head reported twice starts one run, a new head another."""
    from hangar.core.events import StoredEvent
    from hangar.pipelines import PULL_REQUEST_EVENT, PULL_REQUEST_STATE_KEYS

    clock = FakeClock(at(0, 0))
    async with harness(tmp_path, clock=clock) as h:
        script = "echo {{repo_full_name}} {{pr_number}} {{head_sha}}"
        raw = steps(listen("s", "start", body="shell.run", script=script, outputKey="seen"), tid="pr")
        wire = tpl.load(raw, h.engine.bodies).template.to_wire()
        await h.engine.store.insert_template(WS, wire, by=None, now=clock.now())
        with pytest.raises(InvalidArgs, match="takes no eventType"):
            await triggers.create_trigger(h.engine, WS, template_id="pr", kind="pullRequest", event_type="x.y")
        trig = await triggers.create_trigger(h.engine, WS, template_id="pr", kind="pullRequest")
        assert trig.kind == "pullRequest" and trig.event_type == PULL_REQUEST_EVENT
        clock.advance(1)

        def event(n: int, sha: str) -> StoredEvent:
            wire = {"repoId": "r1", "repoFullName": "acme/app", "prNumber": 7, "headSha": sha, "action": "opened"}
            return StoredEvent(WS, n, f"ev{n}", PULL_REQUEST_EVENT, clock.now(), wire)

        first = await h.engine.on_event(event(1, "a" * 40))
        assert len(first) == 1
        assert await h.engine.on_event(event(2, "a" * 40)) == []  # the same head again: no second run
        assert len(await h.engine.on_event(event(3, "b" * 40))) == 1
        await h.engine.settle()
        runs = await h.engine.store.list_runs(WS)
        assert {r.trigger_kind for r in runs} == {"pullRequest"}
        assert sorted(r.trigger_key or "" for r in runs) == [f"r1#7@{'a' * 40}", f"r1#7@{'b' * 40}"]
        snap = await h.engine.snapshot(WS, first[0])
        assert snap["state"]["seen"] == f"acme/app 7 {'a' * 40}"
        run = next(r for r in runs if r.id == first[0])
        assert set(PULL_REQUEST_STATE_KEYS) <= set(run.payload) and run.payload["action"] == "opened"
