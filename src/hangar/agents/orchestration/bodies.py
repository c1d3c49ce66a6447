"""The orchestration bodies: the partial-approval gate, the end of the work DAG, and the deliverable.

Each reads its orchestration fresh from the database (``extras.orchestrationId``) and writes only from the status
it expects, so a repeat after a crash (bodies run at least once) changes nothing twice.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from hangar.agents.orchestration import templates as tpl
from hangar.agents.orchestration.dag import Node
from hangar.agents.orchestration.service import Orchestration, OrchestrationService, load
from hangar.errors import InvalidArgs, NotFound
from hangar.pipelines import ConfigField, StepContext, StepResult, body
from hangar.workspace import TICKET_DESCRIPTION_MAX as DESCRIPTION_MAX
from hangar.workspace import SpaceService, TicketService, pipeline_author

_ORCHESTRATION = ConfigField("extras.orchestrationId", "The orchestration this step belongs to", required=True)
FAILED = "FAILED"


async def _orchestration(step: StepContext) -> Orchestration:
    raw = step.config.extras.get("orchestrationId")
    if not isinstance(raw, str) or not raw:
        raise InvalidArgs(f"step {step.step_id} needs extras.orchestrationId", field="extras.orchestrationId")
    engine = await step.app.dbs.workspace(step.workspace_id)
    async with engine.connect() as conn:
        return await load(conn, step.render(raw), field="extras.orchestrationId")


async def _set_ticket(step: StepContext, ticket_id: str | None, status: str) -> None:
    if ticket_id is None:
        return
    with contextlib.suppress(NotFound):  # a sub-ticket deleted by hand: its node's output is still recorded
        await step.app.service(TicketService).update(step.workspace_id, ticket_id, status=status)


@body(
    tpl.AWAIT_APPROVAL,
    summary="Partial-approval gate: completes when its node is approved, else waits (no 24-hour timeout).",
    config=[_ORCHESTRATION, ConfigField("extras.nodeKey", "The DAG node this gate guards", required=True)],
    resumes=True,
)
async def await_approval(step: StepContext) -> StepResult:
    orch = await _orchestration(step)
    key = str(step.config.extras.get("nodeKey") or "")
    if key not in orch.dag.keys:
        return StepResult.failed(f"node {key!r} is not in the DAG of orchestration {orch.id}")
    if step.resume is None and key not in orch.approved:
        return StepResult.suspend_until_event(
            "orchestration.nodeApproved", match={"orchestrationId": orch.id, "nodeKey": key}
        )
    node = orch.dag.node(key)
    await _set_ticket(step, node.sub_ticket_id, "inProgress")
    # What the sub-tickets it comes after produced (they have all finished: the gate listens to their work
    # steps), for its agent's prompt (``{{upstream_<key>}}``).
    deps = [_result(step, orch.dag.node(d)) for d in node.depends_on]
    upstream = "\n\nResults of the sub-tickets this one comes after:\n\n" + "\n\n".join(r[2] for r in deps)
    state = {tpl.upstream_key(key): upstream if deps else ""}
    return StepResult.ok(state, output={"nodeKey": key, "approved": True})


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False)


def _result(step: StepContext, node: Node) -> tuple[bool, Any, str]:
    """(has output, the output or why not, the section the next agent reads) of one node's work step."""
    key = tpl.output_key(node.key)
    value = step.state.get(key)
    head = f"## {node.title} ({node.key})\n\n"
    if key in step.state and value not in (None, ""):
        return True, value, head + _as_text(value)
    errors = step.state.get("_stepErrors") or {}
    why = (errors.get(tpl.work_step(node.key)) if isinstance(errors, dict) else None) or "no output"
    return False, str(why), f"{head}{FAILED}: {why}"


@body(
    tpl.MARK_PHASE,
    summary="End of the work DAG: records each sub-ticket's output (a failure sentinel where there is none).",
    config=[_ORCHESTRATION],
)
async def mark_phase(step: StepContext) -> StepResult:
    orch = await _orchestration(step)
    outputs: dict[str, Any] = {}
    sections: list[str] = []
    for n in orch.dag.nodes:
        ok, value, section = _result(step, n)
        outputs[n.key] = {"ok": True, "output": value} if ok else {"ok": False, "output": None, "error": value}
        sections.append(section)
    text = "\n\n".join(sections)
    svc = step.app.service(OrchestrationService)
    if orch.status == "running":
        for n in orch.dag.nodes:
            await _set_ticket(step, n.sub_ticket_id, "done" if outputs[n.key]["ok"] else "cancelled")
        await svc.transition(step.workspace_id, orch, "running", status="synthesizing", outputs=outputs)
    return StepResult.ok({tpl.OUTPUTS_KEY: text}, output=outputs)


@body(
    tpl.PERSIST_DELIVERABLE,
    summary="Writes the synthesis output to the parent ticket, completes it, posts it and completes the orchestration.",
    config=[_ORCHESTRATION, ConfigField("state.deliverable", "The synthesis agent's output")],
)
async def persist_deliverable(step: StepContext) -> StepResult:
    orch = await _orchestration(step)
    if orch.status == "completed":
        return StepResult.ok(output={"ticketId": orch.ticket_id})
    if not step.has(tpl.DELIVERABLE_KEY) or step.lookup(tpl.DELIVERABLE_KEY) in (None, ""):
        return StepResult.failed("the synthesis produced no deliverable (state deliverable is empty)")
    text = _as_text(step.lookup(tpl.DELIVERABLE_KEY))
    if len(text) > DESCRIPTION_MAX:
        # Refused before anything is written: the deliverable stays in the run's state, the ticket as it was.
        return StepResult.failed(
            f"the deliverable is {len(text)} characters; a ticket holds at most {DESCRIPTION_MAX}; it is kept in "
            f"the state of run {step.run_id} under {tpl.DELIVERABLE_KEY!r}"
        )
    ticket = await step.app.service(TicketService).get(step.workspace_id, orch.ticket_id)
    space_id = ticket.space_id or orch.space_id
    # Everything before the record says ``completed``, which is last: a reader that sees it sees the ticket done
    # and the post made. A repeat after a crash finds its own post (same author, same text) and makes no other.
    await step.app.service(TicketService).update(step.workspace_id, ticket.id, status="done")
    if space_id is not None:
        await _post_once(step, space_id, f"Deliverable of {ticket.title}:\n\n{text}")
    await step.app.service(OrchestrationService).transition(
        step.workspace_id, orch, "synthesizing", status="completed", deliverable=text
    )
    return StepResult.ok(output={"ticketId": ticket.id, "spaceId": space_id})


async def _post_once(step: StepContext, space_id: str, content: str) -> None:
    spaces = step.app.service(SpaceService)
    author = pipeline_author(step)
    recent = await spaces.recent(step.workspace_id, space_id, limit=50)
    if any(m["author"]["id"] == author.id and m["content"] == content for m in recent):
        return
    await spaces.post(step.workspace_id, space_id, author, content)


BODIES = [await_approval, mark_phase, persist_deliverable]
