"""Retention passes on a running server: events and audit rows one second past the horizon go, one second inside
stay; what is still needed stays whatever its age (a durable cursor's unread events, a suspended step's, a running
agent run's, an event the outbox holds, the newest event, each target's newest audit row); a watcher resuming from
behind the horizon is told; each pass is recorded and shown by ``server.retention``; the settings' bounds on both
sides; servers take turns."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from hangar.agents.tables import agent_runs
from hangar.core import tables
from hangar.core.ids import new_id
from hangar.core.outbox import Outbox, event_outbox
from hangar.core.turns import taking_turn
from hangar.errors import InvalidArgs
from hangar.identity import IdentityService
from hangar.pipelines import tables as pt
from hangar.pipelines.events import TaskFinished
from hangar.pipelines.runtime import PipelinesRuntime
from hangar.retention import RetentionSchedule
from hangar.retention.schedule import MAX_DAYS
from tests.support.rpc import RpcClient, RpcError
from tests.support.server import RunningServer, running_server

HANGAR = str(Path(sys.executable).parent / "hangar")
NOW = datetime.now(UTC).replace(microsecond=0) + timedelta(minutes=5)  # after every row the server writes itself
DAY = timedelta(days=1)


async def workspace(c: RpcClient) -> str:
    ws: str = (await c.call("workspaces.create", name="kept"))["id"]
    return ws


async def settled(srv: RunningServer, ws: str) -> None:
    """The pipelines part has read every event so far (its cursor would keep them otherwise): its poll, as each of
    its scheduler passes makes."""
    engine = await srv.ctx.dbs.workspace(ws)
    for _ in range(600):
        await srv.ctx.service(PipelinesRuntime).poll(ws)
        async with engine.connect() as conn:
            top = (await conn.execute(sa.select(sa.func.max(tables.domain_events.c.seq)))).scalar()
        if await srv.ctx.bus.cursor(ws, "pipelines") >= (top or 0):
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the pipelines cursor never caught up")


async def add_event(srv: RunningServer, ws: str, at: datetime, type_name: str = "test.old", **payload: Any) -> int:
    engine = await srv.ctx.dbs.workspace(ws)
    ev_id = new_id()
    async with engine.begin() as conn:
        done = await conn.execute(
            sa.insert(tables.domain_events).values(id=ev_id, type=type_name, occurred_at=at, payload=payload)
        )
    return int(done.inserted_primary_key[0])  # type: ignore[index]


async def add_audit(srv: RunningServer, ws: str, at: datetime, target: str, seq: int) -> None:
    engine = await srv.ctx.dbs.workspace(ws)
    row = {"at": at, "principal": "test", "action": "test.did", "target": target, "target_seq": seq, "details": {}}
    async with engine.begin() as conn:
        await conn.execute(sa.insert(tables.audit_log).values(**row))


async def seqs(srv: RunningServer, ws: str) -> set[int]:
    engine = await srv.ctx.dbs.workspace(ws)
    async with engine.connect() as conn:
        return set((await conn.execute(sa.select(tables.domain_events.c.seq))).scalars())


async def audit_rows(srv: RunningServer, ws: str, target: str) -> list[int]:
    engine = await srv.ctx.dbs.workspace(ws)
    t = tables.audit_log
    async with engine.connect() as conn:
        return list(
            (await conn.execute(sa.select(t.c.target_seq).where(t.c.target == target).order_by(t.c.id))).scalars()
        )


async def test_rows_one_second_past_the_horizon_go_and_one_second_inside_stay(tmp_path: Path) -> None:
    async with running_server(tmp_path / "data") as srv, RpcClient(srv.ws_url, srv.owner_token) as c:
        identity = srv.ctx.service(IdentityService)
        await identity.set_setting("retention.eventsDays", 1)
        await identity.set_setting("retention.auditDays", 2)
        ws = await workspace(c)
        outside = await add_event(srv, ws, NOW - DAY - timedelta(seconds=1))
        inside = await add_event(srv, ws, NOW - DAY + timedelta(seconds=1))
        newest = await add_event(srv, ws, NOW - 3 * DAY)  # the newest seq is kept, however old
        await add_audit(srv, ws, NOW - 2 * DAY - timedelta(seconds=1), "thing:a", 1)
        await add_audit(srv, ws, NOW - 2 * DAY + timedelta(seconds=1), "thing:a", 2)
        await add_audit(srv, ws, NOW - 9 * DAY, "thing:b", 1)  # a target's newest row is kept, however old
        await settled(srv, ws)

        records = await srv.ctx.service(RetentionSchedule).prune_now(NOW)

        assert records is not None
        held = await seqs(srv, ws)
        assert outside not in held and {inside, newest} <= held
        assert await audit_rows(srv, ws, "thing:a") == [2]
        assert await audit_rows(srv, ws, "thing:b") == [1]
        # The target's sequence goes on from the newest kept row; outside a pass the log still refuses deletion.
        assert await srv.ctx.audit.append(ws, principal="test", action="test.did", target="thing:a") == 3
        engine = await srv.ctx.dbs.workspace(ws)
        with pytest.raises(sa.exc.DBAPIError, match="append-only"):
            async with engine.begin() as conn:
                await conn.execute(sa.delete(tables.audit_log).where(tables.audit_log.c.target == "thing:b"))
        # The pass is recorded per database and shown to the server owner.
        shown = await c.call("server.retention")
        assert shown["eventsDays"] == 1 and shown["auditDays"] == 2
        by_db = {d["database"]: d for d in shown["lastPass"]["databases"]}
        assert by_db[ws]["events"] == 1 and by_db[ws]["audit"] == 1 and by_db[ws]["error"] is None
        assert "server" in by_db and shown["lastPass"]["finishedAt"] is not None
    listed = subprocess.run(
        [HANGAR, "admin", "retention", "--data-dir", str(tmp_path / "data")], capture_output=True, text=True
    )
    assert listed.returncode == 0, listed.stderr
    assert "events are kept 1 day, audit rows 2 days" in listed.stdout
    assert f"  {ws}  1 events, 1 audit rows deleted" in listed.stdout


async def test_nothing_still_needed_is_pruned(tmp_path: Path) -> None:
    async with running_server(tmp_path / "data") as srv, RpcClient(srv.ws_url, srv.owner_token) as c:
        await srv.ctx.service(IdentityService).set_setting("retention.eventsDays", 1)
        ws = await workspace(c)
        old = NOW - 30 * DAY
        await settled(srv, ws)
        gone = await add_event(srv, ws, old)
        # The event tail relays the outbox whenever the authority counter moved since its last look (the workspace
        # and setting above moved it), on a loaded host well after the change: held, it cannot carry the row off
        # before the pass looks.
        async with srv.ctx.service(Outbox).held():
            relayed = await add_event(srv, ws, old, "test.relayed")
            async with srv.ctx.dbs.server.begin() as conn:  # relayed, but its outbox row not yet deleted
                engine = await srv.ctx.dbs.workspace(ws)
                async with engine.connect() as wconn:
                    relayed_id = (
                        await wconn.execute(
                            sa.select(tables.domain_events.c.id).where(tables.domain_events.c.seq == relayed)
                        )
                    ).scalar()
                await conn.execute(
                    sa.insert(event_outbox).values(
                        id=relayed_id, workspace_id=ws, type="test.relayed", occurred_at=old, payload={}
                    )
                )
            finished = await add_event(srv, ws, old, TaskFinished.type, taskId="task-1", outcome="completed")
            waited = await add_event(srv, ws, old, "test.waited")
            engine = await srv.ctx.dbs.workspace(ws)
            async with engine.begin() as conn:
                run = {
                    "id": "run-1", "template_id": "t", "template": {}, "status": "suspended", "trigger_kind": "manual",
                    "payload": {}, "state": {}, "dry_run": False, "created_at": old, "updated_at": old,
                }  # fmt: skip
                await conn.execute(sa.insert(pt.runs).values(**run))
                for step, suspend in (
                    ("tasks", {"taskIds": ["task-1"], "sinceSeq": 10**9}),
                    ("event", {"sinceSeq": waited - 1}),
                ):
                    await conn.execute(
                        sa.insert(pt.step_runs).values(
                            run_id="run-1", step_id=step, position=0, status="suspended", attempts=1, suspend=suspend
                        )
                    )
            for _ in range(3):
                await add_event(srv, ws, old)
            await settled(srv, ws)
            before = await seqs(srv, ws)

            await srv.ctx.service(RetentionSchedule).prune_now(NOW)

            held = await seqs(srv, ws)
            assert gone not in held and relayed in held
            # The task a suspended step waits on finished before it: kept, and every event after the step's sinceSeq.
            assert {s for s in before if s >= finished} <= held

        # A durable cursor and a running agent run keep what they have not read.
        async with engine.begin() as conn:
            await conn.execute(sa.delete(pt.step_runs))
            await conn.execute(sa.insert(tables.event_cursors).values(consumer="test.reader", seq=waited))
        await srv.ctx.service(RetentionSchedule).prune_now(NOW)
        held = await seqs(srv, ws)
        assert finished not in held and {s for s in before if s > waited} <= held
        async with engine.begin() as conn:
            await conn.execute(sa.delete(tables.event_cursors).where(tables.event_cursors.c.consumer == "test.reader"))
            await conn.execute(
                sa.insert(agent_runs).values(
                    id="agent-run", agent_id="a", space_id="s", status="running", prompt="p", has_output=False,
                    turns=0, dispatched_by="test", created_at=old, first_seq=waited + 2,
                )
            )  # fmt: skip
        await srv.ctx.service(RetentionSchedule).prune_now(NOW)
        held = await seqs(srv, ws)
        assert waited not in held and {s for s in before if s >= waited + 2} <= held


async def test_a_watcher_resuming_from_behind_the_horizon_is_told(tmp_path: Path) -> None:
    async with running_server(tmp_path / "data") as srv, RpcClient(srv.ws_url, srv.owner_token) as c:
        await srv.ctx.service(IdentityService).set_setting("retention.eventsDays", 1)
        ws = await workspace(c)
        space = (await c.call("spaces.create", workspace_id=ws, title="followed"))["id"]
        await settled(srv, ws)
        pruned = await add_event(srv, ws, NOW - 30 * DAY)
        await add_event(srv, ws, NOW)
        await settled(srv, ws)
        await srv.ctx.service(RetentionSchedule).prune_now(NOW)
        assert pruned not in await seqs(srv, ws)

        with pytest.raises(RpcError) as refused:
            await c.watch("spaces.watch", workspace_id=ws, space_id=space, afterSeq=pruned - 1)
        assert refused.value.code == "conflict" and "retention" in str(refused.value)
        watch = await c.watch("spaces.watch", workspace_id=ws, space_id=space, afterSeq=pruned)  # at the mark: whole
        await watch.close()
        watch = await c.watch("spaces.watch", workspace_id=ws, space_id=space)  # from now: never refused
        await watch.close()


async def test_the_retention_settings_bounds_on_both_sides(tmp_path: Path) -> None:
    async with running_server(tmp_path / "data") as srv:
        identity = srv.ctx.service(IdentityService)
        for key in ("retention.eventsDays", "retention.auditDays"):
            for value in (0, 1, MAX_DAYS):
                await identity.set_setting(key, value)
                assert await identity.get_setting(key) == value
            for bad in (-1, MAX_DAYS + 1, "30", True, 1.5):
                with pytest.raises(InvalidArgs, match=key.replace(".", r"\.")):
                    await identity.set_setting(key, bad)


async def test_zero_keeps_for_ever_and_servers_take_turns(tmp_path: Path) -> None:
    async with running_server(tmp_path / "data") as srv, RpcClient(srv.ws_url, srv.owner_token) as c:
        identity = srv.ctx.service(IdentityService)
        schedule = srv.ctx.service(RetentionSchedule)
        ws = await workspace(c)
        await settled(srv, ws)
        old = await add_event(srv, ws, NOW - 400 * DAY)
        await add_event(srv, ws, NOW)
        await settled(srv, ws)
        await identity.set_setting("retention.eventsDays", 0)
        await identity.set_setting("retention.auditDays", 0)
        assert await schedule.prune_now(NOW) is None and old in await seqs(srv, ws)

        await identity.set_setting("retention.eventsDays", 1)
        with taking_turn(srv.data_dir / "retention.lock") as mine:  # another server sharing the data directory prunes
            assert mine
            assert await schedule.prune_now(NOW) is None
        assert old in await seqs(srv, ws)
        # Sharing only the database: a pass started within the hour is the turn of the server that started it.
        assert await schedule.prune_now(NOW) is not None and old not in await seqs(srv, ws)
        assert await schedule.pass_once() is None
