"""Ops on orchestrations (``orchestration.*``): start one for a ticket, read it (with its work DAG live), edit the
DAG before work starts, and approve nodes (one by one, or all)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from hangar.agents.orchestration import templates as tpl
from hangar.agents.orchestration.service import Orchestration, OrchestrationService
from hangar.core.part import OpFunction
from hangar.core.types import Timestamp
from hangar.errors import InvalidArgs
from hangar.rpc.context import OpContext
from hangar.rpc.registry import Args, Result, op


class NodeView(Result):
    key: str
    title: str
    description: str
    depends_on: list[str]
    agent_id: str | None
    sub_ticket_id: str | None
    approved: bool
    # planned (no work run yet), waiting (for what it depends on), awaitingApproval, running, done, failed,
    # skipped or cancelled: from the work run's steps.
    state: str
    output: Any = None
    error: str | None = None


class OrchestrationView(Result):
    id: str
    ticket_id: str
    status: str
    agent_id: str
    planner_agent_id: str
    synthesis_agent_id: str
    repo_ids: list[str]
    nodes: list[NodeView]
    plan_run_id: str | None
    work_run_id: str | None
    space_id: str | None
    deliverable: str | None
    error: str | None
    created_by: str
    created_at: Timestamp
    updated_at: Timestamp


def _node_state(orch: Orchestration, key: str, run: dict[str, Any] | None) -> tuple[str, Any, str | None]:
    if run is None:
        return "planned", None, None
    steps = run["steps"]
    gate = steps.get(tpl.gate_step(key), {})
    work = steps.get(tpl.work_step(key), {})
    space = steps.get(f"space_{key}", {})
    recorded = orch.outputs.get(key) or {}
    output = run["state"].get(tpl.output_key(key), recorded.get("output"))
    if work.get("status") == "completed":
        return "done", output, None
    if work.get("status") in ("failed", "skipped", "cancelled", "timedOut"):
        return ("failed" if work["status"] != "skipped" else "skipped"), None, work.get("error")
    if work.get("status") in ("running", "suspended") or space.get("status") in ("running", "completed"):
        return "running", None, None
    if gate.get("status") == "suspended":
        return "awaitingApproval", None, None
    if gate.get("status") in ("failed", "timedOut", "cancelled"):
        return "failed", None, gate.get("error")
    return "waiting", None, None


async def view(svc: OrchestrationService, ws: str, orch: Orchestration) -> OrchestrationView:
    run = await svc.run_view(ws, orch.work_run_id)
    nodes = []
    for n in orch.dag.nodes:
        state, output, error = _node_state(orch, n.key, run)
        nodes.append(
            NodeView(
                key=n.key,
                title=n.title,
                description=n.description,
                depends_on=list(n.depends_on),
                agent_id=n.agent_id,
                sub_ticket_id=n.sub_ticket_id,
                approved=n.key in orch.approved,
                state=state,
                output=output,
                error=error,
            )
        )
    data = {k: v for k, v in vars(orch).items() if k not in ("dag", "approved", "outputs")}
    return OrchestrationView(**data, nodes=nodes)


class StartArgs(Args):
    ticket_id: str
    agent_id: str
    planner_agent_id: str | None = None
    synthesis_agent_id: str | None = None
    repo_ids: list[str] = Field(default_factory=list, max_length=20)


@op("orchestration.start", kind="mutate", scope="workspace", actions=["processSpawn"])
async def orchestration_start(ctx: OpContext, args: StartArgs) -> OrchestrationView:
    """Orchestrate a ticket: the planner agent (default ``agentId``) proposes a DAG of sub-tickets; ``agentId``
    works each sub-ticket (unless its node names another agent); the synthesis agent (default the planner)
    writes the deliverable. ``repoIds``: repos each sub-ticket's space checks out in a worktree of its own."""
    svc = ctx.app.service(OrchestrationService)
    orch = await svc.start(
        ctx.ws,
        args.ticket_id,
        agent_id=args.agent_id,
        planner_agent_id=args.planner_agent_id,
        synthesis_agent_id=args.synthesis_agent_id,
        repo_ids=args.repo_ids,
        by=ctx.principal.label,
    )
    await ctx.audit("orchestration.start", f"orchestration:{orch.id}", {"ticketId": orch.ticket_id})
    return await view(svc, ctx.ws, orch)


class GetArgs(Args):
    orchestration_id: str | None = None
    ticket_id: str | None = None


@op("orchestration.get", kind="read", scope="workspace")
async def orchestration_get(ctx: OpContext, args: GetArgs) -> OrchestrationView:
    """An orchestration, by its id or its ticket's, with each node's state and output from the work run."""
    svc = ctx.app.service(OrchestrationService)
    if args.orchestration_id is not None:
        orch = await svc.get(ctx.ws, args.orchestration_id)
    elif args.ticket_id is not None:
        orch = await svc.for_ticket(ctx.ws, args.ticket_id)
    else:
        raise InvalidArgs("give orchestrationId or ticketId", field="orchestrationId")
    return await view(svc, ctx.ws, orch)


class EditArgs(Args):
    orchestration_id: str
    nodes: list[dict[str, Any]]


@op("orchestration.editDag", kind="mutate", scope="workspace", people_only=True)
async def orchestration_edit_dag(ctx: OpContext, args: EditArgs) -> OrchestrationView:
    """Replace the work DAG before work starts (``nodes``: ``{key, title, description?, dependsOn?, agentId?}``):
    nodes added get a sub-ticket, nodes removed lose theirs; a cycle is refused, naming it. For people only: an
    agent (its credential, or its in-process tools) is refused."""
    svc = ctx.app.service(OrchestrationService)
    orch = await svc.edit(ctx.ws, args.orchestration_id, args.nodes)
    await ctx.audit("orchestration.editDag", f"orchestration:{orch.id}", {"nodes": len(orch.dag.nodes)})
    return await view(svc, ctx.ws, orch)


class ApproveArgs(Args):
    orchestration_id: str
    node_keys: list[str] | None = Field(default=None, max_length=100)
    all: bool = False


@op("orchestration.approve", kind="mutate", scope="workspace", actions=["processSpawn"], people_only=True)
async def orchestration_approve(ctx: OpContext, args: ApproveArgs) -> OrchestrationView:
    """Approve nodes of the DAG (``nodeKeys``) or every node (``all``); the first approval starts the work. For
    people only: an agent (its credential, or its in-process tools) never approves a plan, its own or another's."""
    svc = ctx.app.service(OrchestrationService)
    orch = await svc.approve(ctx.ws, args.orchestration_id, args.node_keys, everything=args.all, by=ctx.principal.label)
    details = {"nodeKeys": "all" if args.all else args.node_keys}
    await ctx.audit("orchestration.approve", f"orchestration:{orch.id}", details)
    return await view(svc, ctx.ws, orch)


OPS: list[OpFunction] = [orchestration_start, orchestration_get, orchestration_edit_dag, orchestration_approve]
