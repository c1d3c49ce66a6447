"""The built-in "review a pull request" template, made for a workspace's reviewers (agents, or a team).

Steps: the trigger; ``messaging.createSpace`` checking out the pull request (``{{repo_id}}#{{pr_number}}``) in a
``review``-mode space; the reviewers in parallel in that space, each submitting ``{findings: [...]}`` against
``REVIEW_SCHEMA`` into state ``reviews`` (agents: one ``conversation.promptAgent`` step each, the ``append``
reducer, ``continueOnFail`` so one failing reviewer does not sink the review; a team: one ``team.dispatch``
``allParallel``), each step read-only (``extras.readOnlyWorktree``: a command agent's program sees the checkout
mounted read-only, and no reviewer is offered an op that changes anything); ``prReview.finalize`` once every
reviewer has settled; ``forge.prComment``; the terminal.

A run needs the state keys ``PR_STATE_KEYS`` (``repo_id``, ``repo_full_name``, ``pr_number``, and optionally
``head_sha``), which the ``pullRequest`` trigger (``PR_TRIGGER``) gives its runs, or a person passes to
``pipelines.runs.start``.
"""

from __future__ import annotations

from typing import Any

from hangar.errors import InvalidArgs
from hangar.forges.review_merge import REVIEW_SCHEMA
from hangar.pipelines import READ_ONLY_WORKTREE

TEMPLATE_ID = "pr-review"
TEMPLATE_NAME = "Review a pull request"
# The trigger kind and payload keys of a pull request opened or pushed to (the pipelines part's ``pullRequest``
# trigger); a run started by hand passes the same keys.
PR_TRIGGER = "pullRequest"
PR_STATE_KEYS: tuple[str, ...] = ("repo_id", "repo_full_name", "pr_number", "head_sha")
MAX_REVIEWERS = 10

REVIEW_PROMPT = (
    "Review pull request #{{pr_number}} of {{repo_full_name}}. Its head is checked out in this space: "
    "read the diff against the base branch and the code around it, and change no file. Report each "
    "problem you find as a finding with the file (relative to the repository's root), the line in the new"
    " version, a severity (blocker, high, medium, low or info), a category (bug, security, performance, "
    "error-handling, tests, docs, style...), a message saying what is wrong and why, and a suggestion "
    'saying how to fix it. Submit every finding at once with submit_output as {"findings": [...]}; an '
    "empty list when you find nothing."
)


def review_template(
    agent_ids: list[str] | None = None, team_id: str | None = None, template_id: str = TEMPLATE_ID
) -> dict[str, Any]:
    """The template for these reviewers: ``agent_ids`` (1 to ``MAX_REVIEWERS``) or ``team_id``, not both."""
    agents = list(dict.fromkeys(agent_ids or []))
    if bool(agents) == bool(team_id):
        raise InvalidArgs("name the reviewers: agentIds or a teamId (one of the two)", field="agentIds")
    if len(agents) > MAX_REVIEWERS:
        raise InvalidArgs(f"at most {MAX_REVIEWERS} reviewer agents", field="agentIds")
    if any(not a.strip() for a in agents) or (team_id is not None and not team_id.strip()):
        raise InvalidArgs("a reviewer's id is empty", field="teamId" if team_id is not None else "agentIds")
    if not template_id.strip():
        raise InvalidArgs("templateId is empty", field="templateId")
    steps: list[dict[str, Any]] = [
        {"id": "start", "kind": "trigger", "body": "pipeline.trigger"},
        {
            "id": "checkout",
            "kind": "listen",
            "body": "messaging.createSpace",
            "trigger": {"sourceStepIds": ["start"]},
            "config": {
                "repoIds": ["{{repo_id}}#{{pr_number}}"],
                "outputKey": "pipeline_space_id",
                "label": "Check out the pull request",
                "extras": {"mode": "review", "conversationTitle": "Review {{repo_full_name}}#{{pr_number}}"},
            },
        },
    ]
    if team_id:
        reviewers = ["review"]
        steps.append(
            {
                "id": "review",
                "kind": "listen",
                "body": "team.dispatch",
                "trigger": {"sourceStepIds": ["checkout"]},
                "config": {
                    "teamId": team_id,
                    "dispatchMode": "allParallel",
                    "prompt": REVIEW_PROMPT,
                    "outputKey": "reviews",
                    "outputSchema": {"type": "array", "items": REVIEW_SCHEMA},
                    "label": "Reviewers",
                    "extras": {READ_ONLY_WORKTREE: True},
                },
            }
        )
    else:
        reviewers = [f"review{n + 1}" for n in range(len(agents))]
        steps += [
            {
                "id": sid,
                "kind": "listen",
                "body": "conversation.promptAgent",
                "trigger": {"sourceStepIds": ["checkout"]},
                "config": {
                    "agentId": agent,
                    "prompt": REVIEW_PROMPT,
                    "outputKey": "reviews",
                    "reducer": "append",
                    "outputSchema": REVIEW_SCHEMA,
                    "continueOnFail": True,
                    "label": f"Reviewer {n + 1}",
                    "extras": {READ_ONLY_WORKTREE: True},
                },
            }
            for n, (sid, agent) in enumerate(zip(reviewers, agents, strict=True))
        ]
    steps += [
        {
            "id": "finalize",
            "kind": "join",
            "body": "prReview.finalize",
            "waitForStepIds": reviewers,
            "config": {"label": "Merge the findings"},
        },
        {
            "id": "comment",
            "kind": "listen",
            "body": "forge.prComment",
            "trigger": {"sourceStepIds": ["finalize"]},
            "config": {
                "label": "Post the review",
                "retryPolicy": {"maxAttempts": 2, "backoff": "exponential", "initialDelayMs": 30000},
            },
        },
        {"id": "end", "kind": "terminal", "trigger": {"sourceStepIds": ["comment"]}},
    ]
    return {"id": template_id, "name": TEMPLATE_NAME, "steps": steps, "edges": []}
