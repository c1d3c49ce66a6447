"""The pull request ops: a workspace's pull requests, one with its diff and checks, opening (or refreshing) one by
hand, and the webhook's secret. Reading and opening need a member (guests and other workspaces' people are
refused: a diff is the repository's code); the secret a workspace admin, and it travels in only."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from hangar.core.part import OpFunction
from hangar.errors import InvalidArgs, NotFound
from hangar.forges.poll import Poller, check_poll_seconds
from hangar.forges.pulls import PullRequests, PullRow
from hangar.forges.results import (
    CheckView,
    PollingView,
    PullFileView,
    PullList,
    PullSummary,
    PullView,
    WebhookView,
)
from hangar.forges.service import ForgeService
from hangar.forges.webhooks import EVENTS, webhook_path
from hangar.rpc.context import OpContext
from hangar.rpc.registry import Args, op
from hangar.workspace import RepoService

SECRET_MIN, SECRET_MAX = 16, 256


class PullsArgs(Args):
    repo_id: str | None = Field(default=None, description="Only this repo's (id or name)")


class PullRef(Args):
    repo_id: str | None = Field(default=None, description="The workspace repo (id or name), with number")
    number: int | None = Field(default=None, ge=1, description="The pull request's number, with repoId")
    space_id: str | None = Field(default=None, description="Or the pull request's space")


class OpenPullArgs(Args):
    repo_id: str = Field(description="The workspace repo (id or name), linked to its forge repository")
    number: int = Field(ge=1, le=10**9 - 1, description="The pull request's number on the forge")


class WebhookSecretArgs(Args):
    secret: str | None = Field(
        default=None, description="The webhook's secret as set on the forge (16 to 256 characters); absent: removed"
    )


class PollingArgs(Args):
    seconds: int | None = Field(
        default=None, description="Poll the forge for pull requests this often (60 to 86400); absent: stop polling"
    )


def _summary_fields(row: PullRow) -> dict[str, Any]:
    return {
        "id": row.id,
        "repo_id": row.repo_id,
        "full_name": row.full_name,
        "number": row.number,
        "space_id": row.space_id,
        "title": row.title,
        "author": row.author,
        "state": row.state,
        "head_sha": row.head_sha,
        "html_url": str(row.facts.get("html_url", "")),
        "synced_at": row.synced_at,
        "error": row.error,
    }


def pull_view(row: PullRow) -> PullView:
    f = row.facts
    return PullView(
        **_summary_fields(row),
        body=str(f.get("body", "")),
        draft=bool(f.get("draft", False)),
        base_ref=str(f.get("base_ref", "")),
        base_sha=str(f.get("base_sha", "")),
        head_ref=str(f.get("head_ref", "")),
        files=[PullFileView.model_validate(x) for x in f.get("files", [])],
        files_truncated=bool(f.get("files_truncated", False)),
        checks=[CheckView.model_validate(c) for c in f.get("checks", [])],
    )


async def _row(ctx: OpContext, args: PullRef) -> PullRow:
    pulls = ctx.app.service(PullRequests)
    if args.space_id is not None:
        if args.repo_id is not None or args.number is not None:
            raise InvalidArgs("name a pull request by spaceId or by repoId and number, not both", field="spaceId")
        return await pulls.of_space(ctx.ws, args.space_id)
    if args.repo_id is None or args.number is None:
        raise InvalidArgs("name a pull request by repoId and number (or spaceId)", field="repoId")
    repo = await ctx.app.service(RepoService).get(ctx.ws, args.repo_id)
    row = await pulls.find(ctx.ws, repo.id, args.number)
    if row is None:
        raise NotFound(f"pull request #{args.number} of repo {repo.name} is not known here: open it (forge.openPr)")
    return row


@op("forge.prs", kind="read", scope="workspace", min_role="member")
async def forge_prs(ctx: OpContext, args: PullsArgs) -> PullList:
    """The workspace's pull requests Hangar knows (a webhook, a poll or a person brought them), newest first per
    repository, each with its space and what the forge said last."""
    repo_id = (await ctx.app.service(RepoService).get(ctx.ws, args.repo_id)).id if args.repo_id else None
    rows = await ctx.app.service(PullRequests).all(ctx.ws, repo_id)
    return PullList(pulls=[PullSummary(**_summary_fields(r)) for r in rows])


@op("forge.pr", kind="read", scope="workspace", min_role="member")
async def forge_pr(ctx: OpContext, args: PullRef) -> PullView:
    """One pull request (by repoId and number, or by its space): title, author, branches, state, its files with
    their patches and its head's checks, as the forge said last, and its link on the forge."""
    return pull_view(await _row(ctx, args))


@op("forge.openPr", kind="mutate", scope="workspace", min_role="member", actions=("networkEgress",))
async def forge_open_pr(ctx: OpContext, args: OpenPullArgs) -> PullView:
    """Open a pull request's space by hand, or refresh it: the forge is asked now. A pull request opened or whose
    head moved fires the workspace's pullRequest triggers, as a webhook would."""
    repo = await ctx.app.service(RepoService).get(ctx.ws, args.repo_id)
    row, fired = await ctx.app.service(PullRequests).sync(ctx.ws, repo, args.number)
    await ctx.audit("forge.openPr", f"repo:{repo.id}", {"number": args.number, "fired": fired})
    return pull_view(row)


@op(
    "forge.setWebhookSecret",
    kind="mutate",
    scope="workspace",
    min_role="admin",
    actions=("secretAccess",),
)
async def forge_set_webhook_secret(ctx: OpContext, args: WebhookSecretArgs) -> WebhookView:
    """Store the secret the forge signs this workspace's webhook deliveries with (write-only), or with none remove
    it (deliveries are refused from then on). Answers the URL to give the forge."""
    forges = ctx.app.service(ForgeService)
    ws = await forges.workspace(ctx.ws)
    forges.required(ws)
    secret = args.secret.strip() if args.secret is not None else None
    if secret is not None and not SECRET_MIN <= len(secret) <= SECRET_MAX:
        raise InvalidArgs(f"secret must be {SECRET_MIN} to {SECRET_MAX} characters", field="secret")
    forges.store.set_webhook_secret(ws.id, secret)
    await ctx.audit("forge.setWebhookSecret", "forge", {"set": secret is not None})
    return WebhookView(
        url=ctx.app.settings.origin.rstrip("/") + webhook_path(ws.id),
        secret_set=secret is not None,
        events=[e for e in EVENTS if e != "ping"],
    )


@op("forge.setPolling", kind="mutate", scope="workspace", min_role="admin", actions=("networkEgress",))
async def forge_set_polling(ctx: OpContext, args: PollingArgs) -> PollingView:
    """Poll the forge for pull requests every ``seconds`` where no webhook reaches this server (each linked
    repository's open pull requests are listed; one new or pushed to is synced and fires the pullRequest
    triggers), or with none stop polling. A rate-limited forge is asked again at its reset, a failing one after a
    doubling backoff."""
    forges = ctx.app.service(ForgeService)
    ws = await forges.workspace(ctx.ws)
    forges.required(ws)
    seconds = check_poll_seconds(args.seconds) if args.seconds is not None else None
    forges.store.set_poll_seconds(ws.id, seconds)
    await ctx.audit("forge.setPolling", "forge", {"seconds": seconds})
    poller = ctx.app.maybe_service(Poller)
    if poller is not None:
        poller.poke(ws.id)
    return PollingView(seconds=seconds)


PULL_OPS: list[OpFunction] = [forge_prs, forge_pr, forge_open_pr, forge_set_webhook_secret, forge_set_polling]
