"""The forge ops: connect a workspace to GitHub (an app or a token), its status, disconnect, link a repo. Each
needs a workspace admin (or the owner); credentials travel in only and audit rows name what was given, never
its value."""

from __future__ import annotations

from pydantic import Field

from hangar.core.part import OpFunction
from hangar.errors import HangarError
from hangar.forges import github
from hangar.forges.reach import Route
from hangar.forges.results import ForgeStatus, InstallationView, RepoLinkView, ReviewTemplate
from hangar.forges.review_template import PR_STATE_KEYS, PR_TRIGGER, TEMPLATE_ID, review_template
from hangar.forges.service import TOKEN_NOT_BROKERED, ForgeService, app_setup_url
from hangar.forges.store import GITHUB_WEB, ForgeConnection, web_and_api
from hangar.identity import Workspace
from hangar.rpc.context import OpContext
from hangar.rpc.registry import Args, op

APP_NAME = "Hangar"


def _forges(ctx: OpContext) -> ForgeService:
    return ctx.app.service(ForgeService)


class ConnectArgs(Args):
    base_url: str | None = Field(
        default=None, description="A GitHub Enterprise Server's address; github.com when absent"
    )
    api_url: str | None = Field(
        default=None, description="The REST API's address when not the usual one (<baseUrl>/api/v3, api.github.com)"
    )
    app_id: int | None = Field(default=None, description="The GitHub App's id (with privateKey)")
    private_key: str | None = Field(default=None, description="The app's private key, PEM; write-only")
    token: str | None = Field(default=None, description="A token instead of an app; write-only")


class StatusArgs(Args):
    base_url: str | None = Field(default=None, description="For the setup link before connecting: a GHES address")
    org: str | None = Field(default=None, description="For the setup link: create the app in this organization")


class LinkArgs(Args):
    repo_id: str = Field(description="The workspace repo (id or name)")
    full_name: str | None = Field(
        default=None, description="The forge repository, owner/name; absent: the origin's link counts again"
    )


async def _status(ctx: OpContext, ws: Workspace, args: StatusArgs | None = None) -> ForgeStatus:
    forges = _forges(ctx)
    connection = forges.connection(ws)
    homepage = ctx.app.settings.origin
    org = args.org if args else None
    if connection is None:
        web = web_and_api(args.base_url if args else None, None)[0] if args else GITHUB_WEB
        return ForgeStatus(connected=False, setup_url=app_setup_url(web, APP_NAME, homepage, org))
    status = ForgeStatus(
        connected=True,
        kind=connection.kind,
        host=connection.host,
        web_url=connection.web_url,
        api_url=connection.api_url,
        app_id=connection.app_id,
        connected_at=connection.connected_at,
        connected_by=connection.connected_by,
        links=[
            RepoLinkView(repo_id=k.repo.id, repo_name=k.repo.name, full_name=k.full_name, how=k.how)
            for k in await forges.links(ws, connection)
        ],
        brokers_tokens=connection.kind == "app",
        webhook_secret_set=forges.store.webhook_secret(ws.id) is not None,
        poll_seconds=forges.store.poll_seconds(ws.id),
        note=None if connection.kind == "app" else TOKEN_NOT_BROKERED,
        setup_url=app_setup_url(connection.web_url, APP_NAME, homepage, org),
    )
    try:
        await _live(status, connection, await forges.route(connection))
    except HangarError as exc:
        status.error = exc.message
    return status


async def _live(status: ForgeStatus, connection: ForgeConnection, route: Route) -> None:
    """What the forge says now: the app's installations, or whose the token is."""
    if connection.kind == "app":
        found = await github.list_installations(connection, route)
        status.installations = [
            InstallationView(id=i.id, account=i.account, repository_selection=i.repository_selection) for i in found
        ]
    else:
        status.login = await github.authenticated_login(connection, route)


@op("forge.connect", kind="mutate", scope="workspace", min_role="admin", actions=("secretAccess", "networkEgress"))
async def forge_connect(ctx: OpContext, args: ConnectArgs) -> ForgeStatus:
    """Connect the workspace to GitHub (github.com or a GitHub Enterprise Server) as a GitHub App (appId and
    privateKey: its installations are listed) or with a token. The forge checks the credentials first; they are
    stored write-only and replace any earlier connection."""
    forges = _forges(ctx)
    ws = await forges.workspace(ctx.ws)
    connection, _installations, _login = await forges.connect(
        ws,
        ctx.principal.label,
        by_owner=ctx.principal.is_server_owner,
        base_url=args.base_url,
        api_url=args.api_url,
        app_id=args.app_id,
        private_key=args.private_key,
        token=args.token,
    )
    fields = (("appId", args.app_id), ("privateKey", args.private_key), ("token", args.token))
    given = sorted(name for name, value in fields if value is not None)
    await ctx.audit("forge.connect", f"forge:{connection.host}", {"kind": connection.kind, "fields": given})
    return await _status(ctx, ws)


@op("forge.status", kind="read", scope="workspace", min_role="admin", actions=("networkEgress",))
async def forge_status(ctx: OpContext, args: StatusArgs) -> ForgeStatus:
    """The workspace's forge: how it is connected (never the credentials), the app's installations or the
    token's login as the forge says now, the linked repos, and the link that creates a GitHub App for Hangar."""
    forges = _forges(ctx)
    return await _status(ctx, await forges.workspace(ctx.ws), args)


@op("forge.disconnect", kind="destructive", scope="workspace", min_role="admin", actions=("secretAccess",))
async def forge_disconnect(ctx: OpContext, args: StatusArgs) -> ForgeStatus:
    """Forget the workspace's forge credentials and hand-given links; steps get no token from then on."""
    forges = _forges(ctx)
    ws = await forges.workspace(ctx.ws)
    if await forges.disconnect(ws):
        await ctx.audit("forge.disconnect", "forge")
    return await _status(ctx, ws, args)


@op("forge.linkRepo", kind="mutate", scope="workspace", min_role="admin", actions=("networkEgress",))
async def forge_link_repo(ctx: OpContext, args: LinkArgs) -> ForgeStatus:
    """Link a workspace repo to its forge repository (owner/name; an app must be installed on it), or with no
    fullName drop the hand-given link so the repo's origin decides again."""
    forges = _forges(ctx)
    ws = await forges.workspace(ctx.ws)
    repo, name = await forges.link(ws, ctx.principal.label, args.repo_id, args.full_name)
    await ctx.audit("forge.linkRepo", f"repo:{repo.id}", {"fullName": name})
    return await _status(ctx, ws)


class ReviewTemplateArgs(Args):
    agent_ids: list[str] = Field(default_factory=list, description="Reviewer agents (ids), each a parallel reviewer")
    team_id: str | None = Field(default=None, description="A team instead: every member reviews (allParallel)")
    template_id: str = Field(default=TEMPLATE_ID, description="The id to save the template under")


@op("forge.reviewTemplate", kind="read", scope="workspace", min_role="member")
async def forge_review_template(ctx: OpContext, args: ReviewTemplateArgs) -> ReviewTemplate:
    """The built-in "review a pull request" template for these reviewers (agents or a team): they review the pull
    request's checkout in parallel, prReview.finalize merges their findings and gives the verdict, and
    forge.prComment posts one review with inline comments. Save it with pipelines.templates.create, start it by
    hand with pipelines.runs.start and the state keys, or add a pullRequest trigger."""
    await _forges(ctx).workspace(ctx.ws)
    return ReviewTemplate(
        template=review_template(args.agent_ids, args.team_id, args.template_id),
        trigger=PR_TRIGGER,
        state_keys=list(PR_STATE_KEYS),
    )


FORGE_OPS: list[OpFunction] = [forge_connect, forge_status, forge_disconnect, forge_link_repo, forge_review_template]
