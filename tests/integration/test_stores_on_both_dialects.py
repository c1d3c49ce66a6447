"""The stores that reach their database through ``hangar.core.db`` behave alike on SQLite and on PostgreSQL:
identity (users, workspaces, memberships and the authority counter), a workspace's spaces, messages and tickets
(with the events they record), and agent records (the chief-executive check under the write lock); and the
stores on the write path (``hangar.core.write_conn``): domain events, the audit log, pipeline ticks, a rig's
action log, the sign-in state, a new workspace's seeds, and the change counters that path's writes move.

PostgreSQL runs use one database with a schema per workspace (``Databases(..., postgresql=URL)``), so the tests
also check that two workspaces never see each other's rows.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa

from hangar.agents.service import Agent, AgentService
from hangar.core.audit import AuditLog
from hangar.core.clock import FakeClock
from hangar.core.context import AppContext
from hangar.core.db import write_transaction
from hangar.core.event_types import StoredEvent
from hangar.core.pg_writer import READER_APPLICATION
from hangar.core.principal import Role
from hangar.core.write_conn import WriteConnection, transaction
from hangar.errors import Conflict, NotFound, Refused
from hangar.identity.authority import AUTHORITY
from hangar.identity.events import WorkspaceCreated
from hangar.identity.service import IdentityService
from hangar.pipelines._algo import StepRec
from hangar.pipelines.events import PipelineRunFinished, TaskFinished
from hangar.pipelines.model import RunStatus, StepStatus
from hangar.pipelines.rows import RunRow, Tick
from hangar.pipelines.store import PipelineStore
from hangar.rigs.store import RigStore
from hangar.sso.handoff import LoginIntent
from hangar.sso.oidc.pending import PendingLogins
from hangar.sso.saml import PendingRequests, SeenAssertions
from hangar.sso.state import state_db
from hangar.workspace.authors import Author
from hangar.workspace.spaces import COUNTER as SPACES
from hangar.workspace.spaces import SpaceService
from hangar.workspace.tickets import TicketService
from tests.support.dialects import DIALECTS, app_for


@pytest.fixture(params=DIALECTS)
async def app(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[AppContext]:
    async with app_for(request, tmp_path) as ctx:
        yield ctx


async def test_users_and_memberships(app: AppContext) -> None:
    identity = app.service(IdentityService)
    owner = await identity.create_user(email="Ada@Example.com", display_name="Ada")
    other = await identity.create_user(email=None, display_name="Bob", sso_issuer="iss", sso_subject="bob")
    found = await identity.find_user_by_email("ada@example.COM")  # the lower(email) index, on both
    assert found is not None and found.id == owner.id
    assert found.created_at == app.clock.now()  # an aware UTC time read back as written
    with pytest.raises(Conflict):  # the partial unique index on (issuer, subject)
        await identity.create_user(email=None, display_name="Bob 2", sso_issuer="iss", sso_subject="bob")
    await identity.create_user(email=None, display_name="no subject")
    await identity.create_user(email=None, display_name="no subject either")  # NULLs do not collide

    before = await app.dbs.stamp(None, AUTHORITY)
    ws = await identity.create_workspace("Team", owner.id)
    await identity.add_member(ws.id, other.id, Role.member)
    assert await app.dbs.stamp(None, AUTHORITY) > before  # the counter's triggers fire on both
    assert await identity.role_of(ws.id, other.id) is Role.member
    await identity.set_role(ws.id, other.id, Role.admin)
    assert await identity.role_of(ws.id, other.id) is Role.admin
    assert {(m.user_id, m.role) for m in await identity.members(ws.id)} == {
        (owner.id, Role.owner),
        (other.id, Role.admin),
    }
    with pytest.raises(Conflict):  # the last owner stays (checked under the write lock)
        await identity.remove_member(ws.id, owner.id)
    await identity.remove_member(ws.id, other.id)
    assert await identity.role_of(ws.id, other.id) is None
    renamed = await identity.update_user(owner.id, display_name="Ada L.")
    assert renamed.display_name == "Ada L."
    assert (await identity.deactivate_user(other.id)).deactivated_at is not None


# The longest id a workspace may have: on PostgreSQL its schema is named by a digest (names stop at 63 bytes).
OTHER = "w" * 64


async def test_spaces_messages_and_tickets(app: AppContext) -> None:
    identity = app.service(IdentityService)
    owner = await identity.create_user(email=None, display_name="Ada")
    await app.dbs.workspace("w1", create=True)
    await identity.create_workspace("w1", owner.id, workspace_id="w1")  # a space's folder is made only once recorded
    await app.dbs.workspace(OTHER, create=True)
    spaces, tickets = SpaceService(app), TicketService(app)
    stamps = (await app.dbs.stamp("w1", SPACES), await app.dbs.stamp(OTHER, SPACES))
    space = await spaces.create("w1", title="Plans", created_by="u1")
    # The change counter of w1 moved (its triggers write w1's counters), the other workspace's did not.
    assert await app.dbs.stamp("w1", SPACES) > stamps[0]
    assert await app.dbs.stamp(OTHER, SPACES) == stamps[1]
    author = Author(kind="user", id="u1", name="Ada")
    first = await spaces.post("w1", space.id, author, "hello", metadata={"tags": ["a", "é"], "n": 1})
    second = await spaces.post("w1", space.id, author, "again")
    assert second["seq"] > first["seq"]
    messages = await spaces.messages("w1", space.id)
    assert [m["content"] for m in messages] == ["hello", "again"]
    assert messages[0]["metadata"] == {"tags": ["a", "é"], "n": 1}  # JSON round trip
    assert (await spaces.rename("w1", space.id, "Roadmap")).title == "Roadmap"
    await spaces.archive("w1", space.id)
    with pytest.raises(Refused):
        await spaces.post("w1", space.id, author, "late")
    assert await app.dbs.last_event_seq("w1") >= 3  # SpaceCreated and two MessagePosted, in w1's own log

    parent = await tickets.create("w1", title="Epic", reporter="u1")
    child = await tickets.create("w1", title="Task", reporter="u1", parent_id=parent.id)
    assert [t.id for t in await tickets.all("w1", parent_id=parent.id)] == [child.id]
    assert (await tickets.update("w1", child.id, status="done")).status == "done"
    assert await tickets.delete("w1", parent.id) == 2

    # The other workspace holds none of it.
    assert await spaces.all(OTHER) == []
    assert await tickets.all(OTHER) == []
    assert await app.dbs.last_event_seq(OTHER) == 0
    with pytest.raises(NotFound):
        await spaces.get(OTHER, space.id)


async def test_agent_records(app: AppContext) -> None:
    await app.dbs.workspace("w1", create=True)
    agents = AgentService(app)
    adapter = {"type": "command", "argv": ["true"]}
    # Two named chief at once: the check and the write run under the write lock, so exactly one passes.
    made = await asyncio.gather(
        *(agents.create("w1", name=name, adapter=adapter, role="chiefExecutive") for name in ("Chief", "Rival")),
        return_exceptions=True,
    )
    assert sorted(type(m).__name__ for m in made) == ["Agent", "Conflict"]
    chief = next(m for m in made if isinstance(m, Agent))
    with pytest.raises(Conflict, match=chief.name):
        await agents.create("w1", name="Second", adapter=adapter, role="chiefExecutive")
    helper = await agents.create("w1", name="Helper", adapter=adapter)
    assert {a.name for a in await agents.all("w1")} == {chief.name, "Helper"}
    assert (await agents.get("w1", chief.id)).adapter.argv == ("true",)
    assert (await agents.update("w1", helper.id, name="Aide")).name == "Aide"
    await agents.delete("w1", helper.id)
    with pytest.raises(NotFound):
        await agents.get("w1", helper.id)


# -- the write path (``hangar.core.write_conn``) ----------------------------------------------------------------


async def test_events_appended_in_sequence_and_read_back(app: AppContext) -> None:
    await app.dbs.workspace("w1", create=True)
    await app.dbs.workspace(OTHER, create=True)
    heard: list[StoredEvent] = []

    async def hear(ev: StoredEvent) -> None:
        heard.append(ev)

    app.bus.subscribe(hear, name="test", workspace_id="w1")
    first = await app.bus.publish_raw("w1", "review.approved", {"by": "ada", "notes": ["é", 1]})
    # Appended at once from many tasks: each gets its own number, none lost, in commit order.
    many = await asyncio.gather(*(app.bus.publish_raw("w1", "review.approved", {"n": i}) for i in range(20)))
    seqs = [first.seq, *(ev.seq for ev in many)]
    assert sorted(seqs) == list(range(first.seq, first.seq + 21))
    assert await app.dbs.last_event_seq("w1") == first.seq + 20
    assert await app.dbs.last_event_seq(OTHER) == 0  # another schema, another log

    replayed = await app.bus.replay("w1", after_seq=first.seq - 1)
    assert [ev.seq for ev in replayed] == sorted(seqs)
    assert replayed[0].payload == {"by": "ada", "notes": ["é", 1]}  # JSON as written
    assert replayed[0].occurred_at == app.clock.now()  # the time as written, aware UTC
    await app.bus.drain()
    assert [ev.seq for ev in heard] == sorted(seqs)  # delivered once each, in sequence order

    # An event carried twice (an outbox relay) is recorded once.
    again = await app.bus.publish_once("w1", first.id, first.type, first.occurred_at, first.payload)
    assert again is None
    moved = await app.bus.publish_once("w1", "relayed-1", "review.approved", app.clock.now(), {"x": 1})
    assert moved is not None and moved.seq == first.seq + 21

    # A statement written once for both: ``?`` placeholders, and a literal ``%`` that psycopg must not take for one.
    def count(conn: WriteConnection, after: int) -> int:
        query = "SELECT count(*) FROM domain_events WHERE type LIKE 'review.%' AND seq > ?"
        return int(conn.execute(query, (after,)).fetchone()[0])

    assert await (await app.dbs.writer("w1")).call(count, first.seq) == 21


async def test_audit_rows_numbered_per_target_and_append_only(app: AppContext) -> None:
    await app.dbs.workspace("w1", create=True)
    audit = AuditLog(app.dbs, app.clock)
    got = await asyncio.gather(*(audit.append("w1", principal="u1", action="a.b", target="t1") for _ in range(5)))
    assert sorted(got) == [1, 2, 3, 4, 5]  # gap-free per target under the write lock
    assert await audit.append("w1", principal="u1", action="a.c", target="t2", details={"k": "é"}) == 1
    rows = await audit.entries("w1", target="t2")
    assert [(r.target_seq, r.details, r.at) for r in rows] == [(1, {"k": "é"}, app.clock.now())]

    writer = await app.dbs.writer("w1")
    for statement in ("UPDATE audit_log SET action = 'forged'", "DELETE FROM audit_log"):
        with pytest.raises(Exception, match="audit_log is append-only"):
            await writer.call(transaction(lambda conn, sql=statement: conn.execute(sql)))
    assert len(await audit.entries("w1")) == 6  # the refused transactions changed nothing


def _run(run_id: str, now: datetime, *, trigger_key: str | None = None) -> RunRow:
    return RunRow(
        id=run_id,
        workspace_id="w1",
        template_id="tpl",
        template={"id": "tpl", "steps": []},
        status=RunStatus.running,
        trigger_kind="manual",
        payload={"p": "é"},
        state={},
        dry_run=False,
        created_at=now,
        updated_at=now,
        trigger_id="trig" if trigger_key else None,
        trigger_key=trigger_key,
    )


async def test_pipeline_run_and_ticks(app: AppContext) -> None:
    await app.dbs.workspace("w1", create=True)
    store = PipelineStore(app.dbs.workspace, app.dbs.writer)
    now = app.clock.now()
    assert await store.create_run(_run("r1", now, trigger_key="k1"), [StepRec("a"), StepRec("b")])
    # The same firing of a trigger again: the unique index refuses it, on either driver's error.
    assert not await store.create_run(_run("r2", now, trigger_key="k1"), [StepRec("a")])

    later = now + timedelta(seconds=5)
    running = StepRec("a", StepStatus.running, attempts=1, started_at=now, progress={"done": 1})
    waiting = StepRec("b", StepStatus.suspended, suspend={"on": "event"}, deadline=later)
    tick = Tick(steps=[running, waiting], waits_added=[("b", "event:review.approved"), ("b", "event:review.approved")])
    seq, stored = await store.commit("w1", "r1", tick, now)
    assert stored == [] and seq == await app.dbs.last_event_seq("w1")
    assert await store.interest("w1", ["event:review.approved", "event:other"], "review.approved") == (
        [("r1", "b")],
        False,
    )

    run, steps = await store.load_run("w1", "r1")
    assert (run.status, run.payload, run.trigger_key) == (RunStatus.running, {"p": "é"}, "k1")
    assert (steps["a"].status, steps["a"].attempts, steps["a"].started_at) == (StepStatus.running, 1, now)
    assert (steps["b"].suspend, steps["b"].deadline) == ({"on": "event"}, later)

    done = _run("r1", now)
    done = RunRow(**{**done.__dict__, "status": RunStatus.completed, "updated_at": later, "finished_at": later})
    finished = PipelineRunFinished(workspace_id="w1", run_id="r1", template_id="tpl", status="completed")
    closing = Tick(
        run=done,
        steps=[StepRec("a", StepStatus.completed, 1, finished_at=later), StepRec("b", StepStatus.completed)],
        waits_cleared=["b"],
        events=[finished],
    )
    seq, stored = await store.commit("w1", "r1", closing, later)
    assert [ev.seq for ev in stored] == [seq] and seq == await app.dbs.last_event_seq("w1")
    assert await store.interest("w1", ["event:review.approved"], "review.approved") == ([], False)
    run, steps = await store.load_run("w1", "r1")
    assert (run.status, run.finished_at, steps["a"].finished_at) == (RunStatus.completed, later, later)
    assert [ev.payload["runId"] for ev in await store.events_since("w1", finished.type, 0)] == ["r1"]


async def test_finished_tasks_found_by_the_task_id_in_their_events(app: AppContext) -> None:
    await app.dbs.workspace("w1", create=True)
    store = PipelineStore(app.dbs.workspace, app.dbs.writer)
    await app.bus.publish_raw("w1", TaskFinished.type, {"taskId": "t1", "outcome": "completed", "output": {"n": 1}})
    await app.bus.publish_raw("w1", TaskFinished.type, {"taskId": "t1", "outcome": "failed"})  # the first wins
    # One stored before the payloads went camelCase.
    await app.bus.publish_raw("w1", TaskFinished.type, {"task_id": "t2", "outcome": "failed", "output": "x"})
    await app.bus.publish_raw("w1", TaskFinished.type, {"taskId": "t3", "outcome": "completed"})
    assert await store.finished_tasks("w1", ["t1", "t2", "missing"]) == {
        "t1": ("completed", {"n": 1}),
        "t2": ("failed", "x"),
    }


async def test_rig_action_log(app: AppContext) -> None:
    await app.dbs.workspace("w1", create=True)
    rigs = RigStore(app.dbs, app.clock)
    got = await asyncio.gather(*(rigs.append_action("w1", "rig1", principal="u1", verb="type") for _ in range(4)))
    assert sorted(got) == [1, 2, 3, 4]
    assert await rigs.append_action("w1", "rig2", principal="u1", verb="click", details={"x": 3}) == 1
    actions = await rigs.actions("w1", "rig2")
    assert [(a.seq, a.verb, a.details, a.at) for a in actions] == [(1, "click", {"x": 3}, app.clock.now())]
    writer = await app.dbs.writer("w1")
    with pytest.raises(Exception, match="rig_action_log is append-only"):
        await writer.call(transaction(lambda conn: conn.execute("DELETE FROM rig_action_log")))


async def test_sign_in_state(app: AppContext) -> None:
    db = state_db(app.dbs)
    clock = app.clock
    assert isinstance(clock, FakeClock)
    requests = PendingRequests(clock, db, ttl=timedelta(minutes=10), capacity=3)
    for i in range(3):
        requests.add(f"_r{i}", relay="web", client_origin="http://localhost:5173")
        clock.advance(1)
    assert len(requests) == 3  # at the capacity: all kept
    peeked = requests.peek("_r0")
    assert peeked is not None and peeked.expires_at == peeked.created_at + timedelta(minutes=10)
    requests.add("_r3")
    assert len(requests) == 3  # one past it: the oldest went
    assert requests.take("_r0") is None
    taken = await asyncio.gather(*(asyncio.to_thread(requests.take, "_r1") for _ in range(4)))
    assert [t.relay if t else None for t in taken].count("web") == 1  # used up once, by exactly one caller
    clock.advance(660)
    assert requests.take("_r2") is None  # expired
    requests.add("_r4")
    assert len(requests) == 1  # the expired rows were purged by the insert

    seen = SeenAssertions(clock, db, capacity=2)
    until = clock.now() + timedelta(minutes=5)
    assert seen.remember("idp\n_a1", until) and not seen.remember("idp\n_a1", until)  # a replay is refused
    assert seen.seen("idp\n_a1")
    clock.advance(360)
    assert seen.remember("idp\n_a1", clock.now() + timedelta(minutes=5))  # expired: accepted again

    logins = PendingLogins(clock, db, capacity=2)
    intent = LoginIntent.restore("web", "http://localhost:5173", None, "cs")
    made = logins.new(
        nonce="n",
        code_verifier="v",
        redirect_uri="http://x/cb",
        intent=intent,
        binding_hash="h",
        issuer="i",
        client_id="c",
    )
    logins.add("s1", made)
    logins.add("s1", made)  # the same state again replaces its row
    assert len(logins) == 1
    back = logins.take("s1")
    assert back is not None and (back.created_at, back.expires_at, back.intent) == (
        made.created_at,
        made.expires_at,
        made.intent,
    )
    assert logins.take("s1") is None


async def test_seeds_of_a_new_workspace(app: AppContext) -> None:
    created = WorkspaceCreated(workspace_id="w2", name="Two", owner_id="u1")
    audited = app.audit.seed(principal="u1", action="workspaces.create", target="workspace:w2")
    await app.dbs.create_workspace("w2", seed=[app.bus.seed(created), audited])
    assert await app.dbs.last_event_seq("w2") == 1
    (event,) = await app.bus.replay("w2")
    assert (event.type, event.payload["name"]) == (WorkspaceCreated.type, "Two")
    assert [(e.action, e.target_seq) for e in await app.audit.entries("w2")] == [("workspaces.create", 1)]

    def failing(conn: WriteConnection) -> None:
        raise RuntimeError("seed failed")

    # A seed that fails leaves no workspace behind (SQLite: no file renamed in; PostgreSQL: no schema).
    with pytest.raises(RuntimeError, match="seed failed"):
        await app.dbs.create_workspace("w3", seed=[app.bus.seed(created), failing])
    with pytest.raises(NotFound):
        await app.dbs.workspace("w3")


async def test_counters_see_the_write_path_and_writes_share_the_lock(app: AppContext) -> None:
    await app.dbs.workspace("w1", create=True)
    before = await app.dbs.stamp("w1", SPACES)
    writer = await app.dbs.writer("w1")
    bump = "UPDATE change_counters SET value = value + 5 WHERE name = ?"
    await writer.call(transaction(lambda conn: conn.execute(bump, (SPACES,))))
    assert await app.dbs.stamp("w1", SPACES) == before + 5
    if app.dbs.server.dialect.name == "postgresql":
        # The counters' reader lost its connection (a server restart, an idle timeout): the next read reconnects.
        async with app.dbs.server.connect() as conn:
            ended = await conn.execute(
                sa.text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = :name"),
                {"name": READER_APPLICATION},
            )
            assert ended.scalars().all() == [True]
        assert await app.dbs.stamp("w1", SPACES) == before + 5

    # A write transaction through SQLAlchemy holds the write lock: the write path waits for it, then writes.
    audit = AuditLog(app.dbs, app.clock)
    async with write_transaction(await app.dbs.workspace("w1")) as conn:
        await conn.execute(sa.text("SELECT 1 FROM change_counters"))
        appending = asyncio.create_task(audit.append("w1", principal="u1", action="a", target="t"))
        await asyncio.sleep(0.3)
        assert not appending.done()  # waiting for the lock, not written beside it
    assert await appending == 1
