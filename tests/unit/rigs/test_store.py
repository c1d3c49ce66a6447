"""Rig records and the append-only action log on a real workspace database."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.exc import DatabaseError

from hangar.core import tables
from hangar.core.audit import sensitive
from hangar.core.clock import FakeClock
from hangar.core.datadir import DataDir
from hangar.core.db import Databases
from hangar.rigs.model import CloseReason, Phase, Surface
from hangar.rigs.store import MIGRATIONS, RigStore, rig_action_log

WS = "ws1"


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[RigStore]:
    dbs = Databases(DataDir(tmp_path).ensure(), [tables.MIGRATIONS, MIGRATIONS])
    await dbs.open()
    await dbs.workspace(WS, create=True)
    try:
        yield RigStore(dbs, FakeClock())
    finally:
        await dbs.aclose()


async def add(store: RigStore, rig_id: str) -> None:
    await store.insert(
        WS,
        rig_id=rig_id,
        space_id="space-1",
        surface=Surface.terminal,
        engine=None,
        backend="enclosure",
        opened_by="user:u1",
        memory_mb=512,
        vcpus=2,
        display=None,
        server_url="http://10.0.0.7:7777",
    )


async def test_a_rig_row_lives_through_its_phases_and_survives_closing(store: RigStore) -> None:
    await add(store, "r1")
    rec = await store.get(WS, "r1")
    assert rec is not None and rec.phase is Phase.provisioning and rec.live
    await store.update(WS, "r1", phase=Phase.ready, status_detail="", resident_mb=12)
    await store.update(WS, "r1", phase=Phase.closed, close_reason=CloseReason.ttl_expired)
    rec = await store.get(WS, "r1")
    assert rec is not None and rec.phase is Phase.closed and rec.close_reason is CloseReason.ttl_expired
    assert rec.resident_mb == 12
    assert await store.rigs(WS) == []
    assert [r.id for r in await store.rigs(WS, include_closed=True)] == ["r1"]
    assert await store.get(WS, "nope") is None


async def test_update_refuses_fields_that_are_not_settable(store: RigStore) -> None:
    await add(store, "r1")
    with pytest.raises(ValueError, match="surface"):
        await store.update(WS, "r1", surface="browser")


async def test_action_sequence_is_monotonic_per_rig_and_content_is_hashed(store: RigStore) -> None:
    await add(store, "r1")
    await add(store, "r2")
    assert await store.append_action(WS, "r1", principal="user:u1", verb="exec", details={"cmd": sensitive("ls")}) == 1
    assert await store.append_action(WS, "r2", principal="user:u1", verb="exec") == 1
    assert await store.append_action(WS, "r1", principal="user:u2", verb="takeControl", outcome="ok") == 2
    log = await store.actions(WS, "r1")
    assert [(e.seq, e.principal, e.verb) for e in log] == [(1, "user:u1", "exec"), (2, "user:u2", "takeControl")]
    assert log[0].details == {"cmd": {"length": 2, "sha256": sensitive("ls")["sha256"]}}


async def test_the_action_log_refuses_edits(store: RigStore) -> None:
    await add(store, "r1")
    await store.append_action(WS, "r1", principal="user:u1", verb="exec")
    engine = await store._engine(WS)
    with pytest.raises(DatabaseError, match="append-only"):
        async with engine.begin() as conn:
            await conn.execute(sa.update(rig_action_log).values(verb="x"))
    with pytest.raises(DatabaseError, match="append-only"):
        async with engine.begin() as conn:
            await conn.execute(sa.delete(rig_action_log))
