"""Pipeline bodies of the workspace part: ``messaging.createSpace``, ``messaging.postMessage`` and
``worktree.cleanup``.

Bodies run at least once (a step running when the server died runs again, with the same attempt number), so each
keys its effect by the step's ``attempt_key`` and finds what an interrupted attempt already did: the space it
opened, the message it posted. Cleanup is idempotent by nature.
"""

from __future__ import annotations

from typing import Any

from hangar.core.types import rfc3339
from hangar.errors import InvalidArgs
from hangar.pipelines import ConfigField, StepContext, StepResult, body
from hangar.workspace.authors import pipeline_author
from hangar.workspace.spaces import SPACE_STATE_KEY, SpaceService, check_mode, clip_title
from hangar.workspace.worktrees import WorktreeService, pr_key


@body(
    "messaging.createSpace",
    summary="Opens the space the rest of the run works in (with repo worktrees), published under outputKey.",
    config=[
        ConfigField("outputKey", f"State key for the new space id; {SPACE_STATE_KEY} is always written too"),
        ConfigField(
            "repoIds",
            "Repos to check out: <repoId>, <repoId>@<branch> or <repoId>#<pullRequestNumber>",
            refers="repo",
        ),
        ConfigField("extras.allRepos", "Check out every workspace repo"),
        ConfigField("extras.mode", "chat, review (default) or plan"),
        ConfigField("extras.createConversation", "Also open it as a named, visible conversation"),
        ConfigField("extras.conversationTitle", "Title of the named conversation ({{key}} substitution)"),
    ],
)
async def create_space(step: StepContext) -> StepResult:
    cfg = step.config
    mode = check_mode(cfg.mode_name or "review", field="extras.mode")
    named = cfg.creates_conversation
    title_src = cfg.conversation_title
    title = clip_title(step.render(title_src) if title_src else f"{step.template_id} · {step.label}")
    spaces = step.app.service(SpaceService)
    specs = [step.render(r) for r in cfg.repo_ids]
    all_repos = bool(cfg.extras.get("allRepos", False))
    wants_repos = bool(specs) or all_repos
    space = await spaces.find_created_by(step.workspace_id, step.attempt_key)
    if space is None:
        await step.app.service(WorktreeService).check_specs(step.workspace_id, specs)
        space = await spaces.create(
            step.workspace_id,
            title=title,
            mode=mode,
            hidden=not named,
            created_by=step.attempt_key,
            provisioning="provisioning" if wants_repos else "ready",
        )
    checked_out: list[dict[str, Any]] = []
    if wants_repos and space.provisioning != "ready":
        made = await step.app.service(WorktreeService).provision_space(
            step.workspace_id, space.id, specs, all_repos=all_repos
        )
        checked_out = [w.to_wire() for w in made]
    await step.progress({"spaceId": space.id, "worktrees": len(checked_out)})
    return StepResult.ok({SPACE_STATE_KEY: space.id}, output=space.id)


@body(
    "messaging.postMessage",
    summary="Posts state content verbatim into the space named by state space_id; writes posted_space_id.",
    config=[
        ConfigField("state.space_id", "The space to post into", required=True),
        ConfigField("state.content", "The message, posted verbatim", required=True),
    ],
)
async def post_message(step: StepContext) -> StepResult:
    space_id = step.lookup("space_id")
    content = step.lookup("content")
    if not isinstance(space_id, str) or not space_id:
        raise InvalidArgs("state space_id must be a space id (a string)", field="space_id")
    if not isinstance(content, str) or not content:
        raise InvalidArgs("state content must be a non-empty string", field="content")
    spaces = step.app.service(SpaceService)
    key = step.attempt_key
    msg = await spaces.find_posted(step.workspace_id, space_id, step.run_key, key)
    if msg is None:
        msg = await spaces.post(
            step.workspace_id, space_id, pipeline_author(step), content, metadata={"pipelineStep": key}
        )
    return StepResult.ok({"posted_space_id": space_id, "posted_at": msg["createdAt"] or rfc3339(step.clock.now())})


@body(
    "worktree.cleanup",
    summary="Releases a ticket's, a PR editor's or a space's worktrees (by trigger payload), else sweeps.",
    config=[
        ConfigField("payload.ticketId", "Release this ticket's worktrees (``ticket_id`` is read too)"),
        ConfigField("payload.repo_full_name", "With pr_number: release that PR editor's worktree"),
        ConfigField("payload.pr_number", "With repo_full_name"),
        ConfigField("payload.spaceId", "Tear down this space's worktrees and folder (``space_id`` is read too)"),
        ConfigField("outputKey", "Receives a one-line summary"),
    ],
    honours_dry_run=True,
)
async def worktree_cleanup(step: StepContext) -> StepResult:
    payload = step.payload
    # A domain event's payload is camelCase (a trigger on workspace.ticketChanged hands over ``ticketId``); a
    # payload a person wrote for a manual run may spell it as these fields were documented first.
    ticket_id = payload.get("ticketId") or payload.get("ticket_id")
    space_id = payload.get("spaceId") or payload.get("space_id")
    kwargs: dict[str, Any] = {}
    if ticket_id:
        kwargs["ticket_id"] = str(ticket_id)
    elif payload.get("repo_full_name") and payload.get("pr_number") is not None:
        kwargs["pr"] = pr_key(str(payload["repo_full_name"]), payload["pr_number"])
    elif space_id:
        kwargs["space_id"] = str(space_id)
    report = await step.app.service(WorktreeService).cleanup(step.workspace_id, dry_run=step.dry_run, **kwargs)
    await step.progress(report.to_wire())
    if step.config.output_key:
        return StepResult.ok(output=report.summary)
    return StepResult.ok()


BODIES = [create_space, post_message, worktree_cleanup]
