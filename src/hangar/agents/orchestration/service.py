"""Orchestrations: a ticket split by a planner agent into a DAG of sub-tickets, worked by agents in dependency
order behind per-node approvals, then synthesised into the ticket's deliverable.

Statuses: ``planning`` (the planner's run is going) → ``planned`` (the DAG is stored with its sub-tickets; a
person may edit it) → ``running`` (the first approval started the work run; the DAG is fixed) → ``synthesizing``
(``orchestration.markPhase``) → ``completed`` (``orchestration.persistDeliverable``), or ``failed`` (a run that
failed or was cancelled; the error says why, and the run keeps its state).

What a run's end means for the record is applied when the run's ``pipeline.runFinished`` event arrives
(``follow_runs``) and again whenever the record is read (``settle``), under the write lock and only from the status
the run left it in: every process reads the same runs, so whichever looks first records it once, and a server
killed before it looked finds the run where it left it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.agents import tables
from hangar.agents.orchestration import templates as tpl
from hangar.agents.orchestration.dag import Dag, parse
from hangar.agents.orchestration.events import OrchestrationChanged, OrchestrationNodeApproved
from hangar.agents.service import AgentService
from hangar.core.context import AppContext
from hangar.core.event_types import StoredEvent
from hangar.core.events import Subscription
from hangar.core.ids import new_id
from hangar.errors import Conflict, InvalidArgs, NotFound
from hangar.pipelines import PipelineEngine, PipelineRunFinished, RunStatus
from hangar.workspace import TicketService

log = logging.getLogger(__name__)

STATUSES = ("planning", "planned", "running", "synthesizing", "completed", "failed")
EDITABLE = "planned"
T = tables.orchestrations


@dataclass(frozen=True)
class Orchestration:
    id: str
    ticket_id: str
    status: str
    agent_id: str
    planner_agent_id: str
    synthesis_agent_id: str
    repo_ids: list[str]
    dag: Dag
    approved: list[str]
    outputs: dict[str, Any]
    plan_run_id: str | None
    work_run_id: str | None
    space_id: str | None
    deliverable: str | None
    error: str | None
    created_by: str
    created_at: datetime
    updated_at: datetime


def _row(row: Any) -> Orchestration:
    data = dict(row)
    data["dag"] = parse(data["dag"]) if data["dag"] else Dag()
    return Orchestration(**data)


async def load(conn: AsyncConnection, orchestration_id: str, field: str = "orchestrationId") -> Orchestration:
    row = (await conn.execute(sa.select(T).where(T.c.id == orchestration_id))).mappings().first()
    if row is None:
        raise NotFound(f"{field}: orchestration {orchestration_id} does not exist in this workspace")
    return _row(row)


class OrchestrationService:
    def __init__(self, app: AppContext) -> None:
        self._app = app
        self._locks: dict[str, asyncio.Lock] = {}
        self._sub: Subscription | None = None

    def follow_runs(self) -> None:
        """Settle an orchestration as soon as one of its runs ends (the plan stored, a failure recorded)."""
        self._sub = self._app.bus.subscribe(
            self._on_run_finished, name="orchestration-runs", types=[PipelineRunFinished.type]
        )

    async def aclose(self) -> None:
        if self._sub is not None:
            await self._app.bus.unsubscribe(self._sub)
            self._sub = None

    async def _on_run_finished(self, event: StoredEvent) -> None:
        if event.payload.get("templateId") not in (tpl.PLAN_TEMPLATE_ID, tpl.WORK_TEMPLATE_ID):
            return
        # The run is keyed by its orchestration (``_start_once``): found even when it ended before its id was
        # recorded on the orchestration (a planner that answers at once).
        run_id = str(event.payload.get("runId"))
        try:
            run, _steps = await self._engine.store.load_run(event.workspace_id, run_id)
            if run.trigger_id is not None and run.trigger_key in ("plan", "work"):
                await self.get(event.workspace_id, run.trigger_id)
        except Exception:  # the next read settles it; the subscription must live on
            log.exception("orchestration run %s ended; settling its orchestration failed", run_id)

    @property
    def _engine(self) -> PipelineEngine:
        return self._app.service(PipelineEngine)

    def _lock(self, orchestration_id: str) -> asyncio.Lock:
        return self._locks.setdefault(orchestration_id, asyncio.Lock())

    async def _read(self, workspace_id: str, orchestration_id: str) -> Orchestration:
        engine = await self._app.dbs.workspace(workspace_id)
        async with engine.connect() as conn:
            return await load(conn, orchestration_id)

    async def transition(
        self, workspace_id: str, orch: Orchestration, expect: str, **values: Any
    ) -> Orchestration | None:
        """Write ``values`` when the record is still in status ``expect``; ``None`` when it no longer is."""
        values["updated_at"] = self._app.clock.now()
        async with self._app.bus.transaction(workspace_id, serialized=True) as tx:
            res = await tx.conn.execute(sa.update(T).where(T.c.id == orch.id, T.c.status == expect).values(**values))
            if res.rowcount != 1:
                return None
            status = values.get("status", expect)
            await tx.publish(OrchestrationChanged(workspace_id=workspace_id, orchestration_id=orch.id, status=status))
        return await self._read(workspace_id, orch.id)

    # -- starting and reading --------------------------------------------------------------------------------

    async def start(
        self,
        workspace_id: str,
        ticket_id: str,
        *,
        agent_id: str,
        planner_agent_id: str | None,
        synthesis_agent_id: str | None,
        repo_ids: list[str],
        by: str,
    ) -> Orchestration:
        ticket = await self._app.service(TicketService).get(workspace_id, ticket_id)
        agents = self._app.service(AgentService)
        planner = planner_agent_id or agent_id
        synthesis = synthesis_agent_id or planner
        for field, aid in (("agentId", agent_id), ("plannerAgentId", planner), ("synthesisAgentId", synthesis)):
            await agents.get(workspace_id, aid, field=field)
        orchestration_id = new_id()
        now = self._app.clock.now()
        async with self._app.bus.transaction(workspace_id, serialized=True) as tx:
            taken = (await tx.conn.execute(sa.select(T.c.id).where(T.c.ticket_id == ticket.id))).first()
            if taken is not None:
                raise Conflict(f"ticketId: ticket {ticket.id} is already orchestrated (orchestration {taken.id})")
            await tx.conn.execute(
                sa.insert(T).values(
                    id=orchestration_id,
                    ticket_id=ticket.id,
                    status="planning",
                    agent_id=agent_id,
                    planner_agent_id=planner,
                    synthesis_agent_id=synthesis,
                    repo_ids=list(repo_ids),
                    dag=[],
                    approved=[],
                    outputs={},
                    created_by=by,
                    created_at=now,
                    updated_at=now,
                )
            )
            await tx.publish(
                OrchestrationChanged(workspace_id=workspace_id, orchestration_id=orchestration_id, status="planning")
            )
        orch = await self._read(workspace_id, orchestration_id)
        return await self._ensure_plan_run(workspace_id, orch, by)

    async def _start_once(
        self, workspace_id: str, orch: Orchestration, which: str, raw: dict[str, Any], payload: dict[str, Any], by: str
    ) -> str:
        """Start the orchestration's ``which`` run (``plan``, ``work``) unless it has one: the run is keyed by the
        orchestration and ``which``, so a server that died between starting it and recording it finds it."""
        engine = self._engine
        run_id = await engine.start_run(
            workspace_id,
            engine.load_template(raw),
            payload=payload,
            trigger_kind="manual",
            trigger_id=orch.id,
            trigger_key=which,
            by=by,
        )
        if run_id is None:
            run_id = await engine.store.find_firing(workspace_id, orch.id, which)
        assert run_id is not None  # the firing that refused a second run is stored
        return run_id

    async def _ensure_plan_run(self, workspace_id: str, orch: Orchestration, by: str) -> Orchestration:
        ticket = await self._app.service(TicketService).get(workspace_id, orch.ticket_id)
        run_id = await self._start_once(
            workspace_id,
            orch,
            "plan",
            tpl.plan_template(orch.planner_agent_id),
            tpl.plan_payload(orch.id, ticket.title, ticket.description),
            by,
        )
        return await self.transition(workspace_id, orch, "planning", plan_run_id=run_id) or orch

    async def get(self, workspace_id: str, orchestration_id: str) -> Orchestration:
        return await self.settle(workspace_id, await self._read(workspace_id, orchestration_id))

    async def for_ticket(self, workspace_id: str, ticket_id: str) -> Orchestration:
        engine = await self._app.dbs.workspace(workspace_id)
        async with engine.connect() as conn:
            row = (await conn.execute(sa.select(T.c.id).where(T.c.ticket_id == ticket_id))).first()
        if row is None:
            raise NotFound(f"ticketId: ticket {ticket_id} has no orchestration")
        return await self.get(workspace_id, row.id)

    async def run_view(self, workspace_id: str, run_id: str | None) -> dict[str, Any] | None:
        """The work run as the pipelines part shows it (``None`` before it starts)."""
        if run_id is None:
            return None
        return await self._engine.snapshot(workspace_id, run_id)

    # -- applying what the runs did ---------------------------------------------------------------------------

    async def settle(self, workspace_id: str, orch: Orchestration) -> Orchestration:
        # A server that died between recording a status and its run's id: the run is found (or started) again.
        if orch.status == "planning" and orch.plan_run_id is None:
            async with self._lock(orch.id):
                orch = await self._ensure_plan_run(
                    workspace_id, await self._read(workspace_id, orch.id), orch.created_by
                )
        if orch.status == "running" and orch.work_run_id is None:
            async with self._lock(orch.id):
                orch = await self._ensure_work_run(
                    workspace_id, await self._read(workspace_id, orch.id), orch.created_by
                )
        if orch.status == "planning" and orch.plan_run_id is not None:
            async with self._lock(orch.id):
                return await self._settle_plan(workspace_id, await self._read(workspace_id, orch.id))
        if orch.status in ("running", "synthesizing") and orch.work_run_id is not None:
            run = await self._engine.snapshot(workspace_id, orch.work_run_id)
            if run["status"] in (RunStatus.failed.value, RunStatus.cancelled.value):
                return await self._fail(workspace_id, orch, run) or await self._read(workspace_id, orch.id)
        return orch

    async def _fail(self, workspace_id: str, orch: Orchestration, run: dict[str, Any]) -> Orchestration | None:
        errors = [f"{sid}: {s['error']}" for sid, s in run["steps"].items() if s.get("error")]
        why = f"the {'planning' if orch.status == 'planning' else 'work'} run {run['status']}"
        error = f"{why}: {'; '.join(errors)}" if errors else why
        return await self.transition(workspace_id, orch, orch.status, status="failed", error=error)

    async def _settle_plan(self, workspace_id: str, orch: Orchestration) -> Orchestration:
        if orch.status != "planning" or orch.plan_run_id is None:
            return orch
        run = await self._engine.snapshot(workspace_id, orch.plan_run_id)
        if run["status"] in (RunStatus.failed.value, RunStatus.cancelled.value):
            return await self._fail(workspace_id, orch, run) or await self._read(workspace_id, orch.id)
        if run["status"] != RunStatus.completed.value:
            return orch
        state = run["state"]
        proposed = (state.get(tpl.PLAN_KEY) or {}).get("subTickets")
        try:
            dag = await self.checked(workspace_id, proposed, field_name="subTickets")
        except (InvalidArgs, NotFound) as exc:
            return await self.transition(
                workspace_id, orch, "planning", status="failed", error=f"the planner's DAG was refused: {exc}"
            ) or await self._read(workspace_id, orch.id)
        dag = await self._sync_sub_tickets(workspace_id, orch, Dag(), dag)
        done = await self.transition(
            workspace_id, orch, "planning", status="planned", dag=dag.to_json(), space_id=state.get("pipeline_space_id")
        )
        if done is None:  # another server stored the plan first: the sub-tickets filed here go
            await self._drop_sub_tickets(workspace_id, dag)
        return done or await self._read(workspace_id, orch.id)

    async def _drop_sub_tickets(self, workspace_id: str, dag: Dag) -> None:
        tickets = self._app.service(TicketService)
        for n in dag.nodes:
            if n.sub_ticket_id is not None:
                with contextlib.suppress(NotFound):
                    await tickets.delete(workspace_id, n.sub_ticket_id)

    async def _sync_sub_tickets(self, workspace_id: str, orch: Orchestration, old: Dag, new: Dag) -> Dag:
        """A sub-ticket per node of ``new`` (kept for a key ``old`` had, filed for a new one, retitled when its
        title changed). Those of the keys ``new`` drops are deleted by the caller once the new DAG is stored."""
        tickets = self._app.service(TicketService)
        kept = {n.key: n for n in old.nodes}
        nodes = []
        for n in new.nodes:
            before = kept.get(n.key)
            sub = before.sub_ticket_id if before is not None else None
            if sub is None:
                made = await tickets.create(
                    workspace_id,
                    title=n.title,
                    description=n.description,
                    reporter=orch.created_by,
                    parent_id=orch.ticket_id,
                )
                sub = made.id
            elif before is not None and (before.title, before.description) != (n.title, n.description):
                await tickets.update(workspace_id, sub, title=n.title, description=n.description)
            nodes.append(type(n)(n.key, n.title, n.description, n.depends_on, n.agent_id, sub))
        return Dag(tuple(nodes))

    async def checked(self, workspace_id: str, raw: Any, *, field_name: str = "nodes") -> Dag:
        """A DAG from its wire form, checked as a whole: its shape (``dag.parse``) and every agent it names being an
        agent of this workspace (``NotFound`` naming the node otherwise). The one check of a person's edit and of
        the planner's proposal: a planner reads the ticket, which anyone who can file one writes."""
        dag = parse(raw, field_name=field_name)
        agents = self._app.service(AgentService)
        for i, n in enumerate(dag.nodes):
            if n.agent_id is not None:
                await agents.get(workspace_id, n.agent_id, field=f"{field_name}[{i}].agentId")
        return dag

    # -- what people do --------------------------------------------------------------------------------------

    async def edit(self, workspace_id: str, orchestration_id: str, raw_nodes: Any) -> Orchestration:
        """Replace the DAG (nodes added, removed, retitled; edges changed) before work starts."""
        async with self._lock(orchestration_id):
            orch = await self.get(workspace_id, orchestration_id)
            if orch.status != EDITABLE:
                raise Conflict(
                    f"orchestration {orch.id} is {orch.status}: its DAG can be edited only while it is planned, "
                    "before any approval starts the work"
                )
            new = await self.checked(workspace_id, raw_nodes)
            carried = Dag(
                tuple(
                    type(n)(n.key, n.title, n.description, n.depends_on, n.agent_id, _sub(orch.dag, n.key))
                    for n in new.nodes
                )
            )
            dag = await self._sync_sub_tickets(workspace_id, orch, orch.dag, carried)
            done = await self.transition(workspace_id, orch, EDITABLE, dag=dag.to_json())
            if done is None:  # approved meanwhile (through another server): the sub-tickets filed here go
                known = set(orch.dag.keys)
                await self._drop_sub_tickets(workspace_id, Dag(tuple(n for n in dag.nodes if n.key not in known)))
                raise Conflict(f"orchestration {orch.id} changed while it was being edited; read it again")
            await self._drop_sub_tickets(workspace_id, Dag(tuple(n for n in orch.dag.nodes if n.key not in dag.keys)))
            return done

    async def approve(
        self, workspace_id: str, orchestration_id: str, node_keys: list[str] | None, *, everything: bool, by: str
    ) -> Orchestration:
        """Approve nodes (or all of them): the first approval of a planned orchestration starts its work run."""
        async with self._lock(orchestration_id):
            orch = await self.get(workspace_id, orchestration_id)
            if orch.status not in ("planned", "running"):
                raise Conflict(f"orchestration {orch.id} is {orch.status}: there is nothing left to approve")
            if everything:
                keys = orch.dag.keys
            else:
                if not node_keys:
                    raise InvalidArgs("give nodeKeys, or all: true", field="nodeKeys")
                unknown = [k for k in node_keys if k not in orch.dag.keys]
                if unknown:
                    raise InvalidArgs(
                        f"nodeKeys: no node {unknown[0]!r} in the DAG of orchestration {orch.id}", field="nodeKeys"
                    )
                keys = list(dict.fromkeys(node_keys))
            fresh = [k for k in keys if k not in orch.approved]
            now = self._app.clock.now()
            async with self._app.bus.transaction(workspace_id, serialized=True) as tx:
                current = await load(tx.conn, orch.id)
                approved = [*current.approved, *(k for k in fresh if k not in current.approved)]
                await tx.conn.execute(sa.update(T).where(T.c.id == orch.id).values(approved=approved, updated_at=now))
                for k in fresh:
                    await tx.publish(
                        OrchestrationNodeApproved(workspace_id=workspace_id, orchestration_id=orch.id, node_key=k)
                    )
            if orch.status == "planned":
                orch = await self._start_work(workspace_id, orch, by)
            return await self._read(workspace_id, orch.id)

    async def _start_work(self, workspace_id: str, orch: Orchestration, by: str) -> Orchestration:
        claimed = await self.transition(workspace_id, orch, "planned", status="running")
        if claimed is None:
            return await self._read(workspace_id, orch.id)
        return await self._ensure_work_run(workspace_id, claimed, by)

    async def _ensure_work_run(self, workspace_id: str, orch: Orchestration, by: str) -> Orchestration:
        if orch.status != "running" or orch.work_run_id is not None:
            return orch
        ticket = await self._app.service(TicketService).get(workspace_id, orch.ticket_id)
        raw = tpl.work_template(
            orch.id,
            orch.dag,
            agent_id=orch.agent_id,
            synthesis_agent_id=orch.synthesis_agent_id,
            repo_ids=orch.repo_ids,
        )
        payload = tpl.work_payload(orch.id, orch.dag, ticket.title, ticket.description)
        run_id = await self._start_once(workspace_id, orch, "work", raw, payload, by)
        if ticket.status != "inProgress":
            await self._app.service(TicketService).update(workspace_id, orch.ticket_id, status="inProgress")
        return await self.transition(workspace_id, orch, "running", work_run_id=run_id) or orch


def _sub(dag: Dag, key: str) -> str | None:
    return dag.node(key).sub_ticket_id if key in dag.keys else None
