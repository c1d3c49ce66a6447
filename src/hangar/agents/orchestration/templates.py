"""The built-in orchestration templates, made for one orchestration from its records.

``plan_template``: a space for the ticket, then the planner agent, whose ``submit_output`` (``PLAN_SCHEMA``) is
the proposed DAG. ``work_template``: per sub-ticket ``gate_<key>`` (``orchestration.awaitApproval``, after the
work steps of what it depends on, whose results it writes for the node's prompt), ``space_<key>`` (its own
space, with its own worktree of each repo) and ``work_<key>`` (its agent, ``continueOnFail``: a failed sub-ticket
leaves a failure sentinel, not a failed run); then ``mark`` (``orchestration.markPhase``, a join on every work
step), the synthesis space and agent, and ``persist`` (``orchestration.persistDeliverable``). Texts people wrote
reach prompts through the run's payload (``{{prompt_<key>}}``), so braces in them are never read as placeholders.
"""

from __future__ import annotations

from typing import Any

from hangar.agents.orchestration.dag import MAX_NODES, Dag

PLAN_TEMPLATE_ID = "orchestration-plan"
WORK_TEMPLATE_ID = "orchestration"
AWAIT_APPROVAL = "orchestration.awaitApproval"
MARK_PHASE = "orchestration.markPhase"
PERSIST_DELIVERABLE = "orchestration.persistDeliverable"
PLAN_KEY = "plan"
OUTPUTS_KEY = "orchestration_outputs"
DELIVERABLE_KEY = "deliverable"

_NODE = {
    "type": "object",
    "properties": {
        "key": {"type": "string"},
        "title": {"type": "string"},
        "description": {"type": "string"},
        "dependsOn": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["key", "title"],
}
PLAN_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"subTickets": {"type": "array", "items": _NODE}},
    "required": ["subTickets"],
}

PLAN_PROMPT = (
    "Split this ticket into at most {max_nodes} sub-tickets that agents can work on separately. Give each a key "
    "(lower-case letters, digits and _), a title, a description of the work, and dependsOn: the keys of the "
    "sub-tickets whose results it needs first. Submit them as subTickets.\n\n"
)


def work_step(key: str) -> str:
    return f"work_{key}"


def gate_step(key: str) -> str:
    return f"gate_{key}"


def output_key(key: str) -> str:
    return f"out_{key}"


def upstream_key(key: str) -> str:
    """Where the gate of ``key`` writes the results of what it depends on, for its agent's prompt."""
    return f"upstream_{key}"


def _listen(step_id: str, body: str, sources: list[str], config: dict[str, Any]) -> dict[str, Any]:
    return {"id": step_id, "kind": "listen", "body": body, "trigger": {"sourceStepIds": sources}, "config": config}


def plan_template(planner_agent_id: str) -> dict[str, Any]:
    return {
        "id": PLAN_TEMPLATE_ID,
        "name": "Plan an orchestration",
        "steps": [
            {"id": "start", "kind": "trigger", "body": "pipeline.trigger"},
            _listen(
                "space",
                "messaging.createSpace",
                ["start"],
                {"extras": {"createConversation": True, "conversationTitle": "Plan: {{ticket_title}}", "mode": "plan"}},
            ),
            _listen(
                "plan",
                "conversation.promptAgent",
                ["space"],
                {
                    "agentId": planner_agent_id,
                    "prompt": "{{plan_prompt}}",
                    "outputSchema": PLAN_SCHEMA,
                    "outputKey": PLAN_KEY,
                    "label": "Planner",
                },
            ),
            {"id": "end", "kind": "terminal", "trigger": {"sourceStepIds": ["plan"]}},
        ],
    }


def plan_payload(orchestration_id: str, ticket_title: str, ticket_description: str) -> dict[str, Any]:
    prompt = PLAN_PROMPT.format(max_nodes=MAX_NODES) + f"Ticket: {ticket_title}\n\n{ticket_description}"
    return {"orchestrationId": orchestration_id, "ticket_title": ticket_title, "plan_prompt": prompt}


def work_template(
    orchestration_id: str, dag: Dag, *, agent_id: str, synthesis_agent_id: str, repo_ids: list[str]
) -> dict[str, Any]:
    steps: list[dict[str, Any]] = [{"id": "start", "kind": "trigger", "body": "pipeline.trigger"}]
    for n in dag.nodes:
        sources = [work_step(d) for d in n.depends_on] or ["start"]
        steps.append(
            _listen(
                gate_step(n.key),
                AWAIT_APPROVAL,
                sources,
                {
                    "label": f"Approve {n.key}",
                    "extras": {"orchestrationId": orchestration_id, "nodeKey": n.key, "awaitApproval": True},
                },
            )
        )
        steps.append(
            _listen(
                f"space_{n.key}",
                "messaging.createSpace",
                [gate_step(n.key)],
                {
                    "outputKey": f"space_{n.key}",
                    "repoIds": repo_ids,
                    "extras": {"createConversation": True, "conversationTitle": f"{{{{title_{n.key}}}}}"},
                },
            )
        )
        steps.append(
            _listen(
                work_step(n.key),
                "conversation.promptAgent",
                [f"space_{n.key}"],
                {
                    "agentId": n.agent_id or agent_id,
                    "prompt": f"{{{{prompt_{n.key}}}}}{{{{{upstream_key(n.key)}}}}}",
                    "outputKey": output_key(n.key),
                    "label": n.key,
                    "continueOnFail": True,
                    "extras": {"spaceId": f"{{{{space_{n.key}}}}}"},
                },
            )
        )
    steps += [
        {
            "id": "mark",
            "kind": "join",
            "body": MARK_PHASE,
            "waitForStepIds": [work_step(k) for k in dag.keys],
            "config": {"extras": {"orchestrationId": orchestration_id}},
        },
        _listen(
            "synthesis_space",
            "messaging.createSpace",
            ["mark"],
            {"outputKey": "synthesis_space", "extras": {"conversationTitle": "Synthesis: {{ticket_title}}"}},
        ),
        _listen(
            "synthesis",
            "conversation.promptAgent",
            ["synthesis_space"],
            {
                "agentId": synthesis_agent_id,
                "prompt": "{{synthesis_prompt}}\n\n{{" + OUTPUTS_KEY + "}}",
                "outputKey": DELIVERABLE_KEY,
                "label": "Synthesis",
                "extras": {"spaceId": "{{synthesis_space}}"},
            },
        ),
        _listen("persist", PERSIST_DELIVERABLE, ["synthesis"], {"extras": {"orchestrationId": orchestration_id}}),
        {"id": "end", "kind": "terminal", "trigger": {"sourceStepIds": ["persist"]}},
    ]
    return {"id": WORK_TEMPLATE_ID, "name": "Orchestrate a ticket", "steps": steps}


def work_payload(orchestration_id: str, dag: Dag, ticket_title: str, ticket_description: str) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "orchestrationId": orchestration_id,
        "ticket_title": ticket_title,
        "synthesis_prompt": (
            f"Combine the results of the sub-tickets below into the deliverable of the ticket {ticket_title!r}. "
            "A sub-ticket marked FAILED produced nothing; say what is missing.\n\n"
            f"Ticket: {ticket_title}\n\n{ticket_description}"
        ),
    }
    for n in dag.nodes:
        payload[f"title_{n.key}"] = n.title
        payload[f"prompt_{n.key}"] = (
            f"Work on this sub-ticket of the ticket {ticket_title!r} and answer with its result.\n\n"
            f"Sub-ticket: {n.title}\n\n{n.description}"
        )
    return payload
