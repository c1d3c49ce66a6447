"""Ops on tickets, repos and worktrees."""

from __future__ import annotations

from pydantic import Field

from hangar.core.part import OpFunction
from hangar.errors import InvalidArgs
from hangar.rpc.context import OpContext
from hangar.rpc.registry import NoArgs, op, to_wire
from hangar.workspace.args import WsArgs
from hangar.workspace.ops_spaces import shows_paths
from hangar.workspace.repos import RepoService
from hangar.workspace.results import (
    CleanupView,
    RepoList,
    RepoRemoved,
    RepoView,
    TicketDetail,
    TicketList,
    TicketsDeleted,
    TicketView,
    WorktreeList,
    WorktreeView,
)
from hangar.workspace.tickets import TicketService
from hangar.workspace.worktrees import WorktreeService, pr_key

# ---- tickets


class TicketCreateArgs(WsArgs):
    title: str
    description: str = ""
    parent_id: str | None = None
    status: str = "open"
    space_id: str | None = None


@op("tickets.create", kind="mutate", scope="workspace")
async def tickets_create(ctx: OpContext, args: TicketCreateArgs) -> TicketView:
    """File a ticket (a sub-ticket with ``parentId``), reported by the caller."""
    ticket = await ctx.app.service(TicketService).create(
        ctx.ws,
        title=args.title,
        description=args.description,
        reporter=ctx.principal.label,
        parent_id=args.parent_id,
        status=args.status,
        space_id=args.space_id,
    )
    await ctx.audit("tickets.create", f"ticket:{ticket.id}", {"title": ticket.title})
    return TicketView.model_validate(ticket)


class TicketListArgs(WsArgs):
    parent_id: str | None = None
    roots_only: bool = False
    status: str | None = None


@op("tickets.list", kind="read", scope="workspace")
async def tickets_list(ctx: OpContext, args: TicketListArgs) -> TicketList:
    """List tickets, optionally the sub-tickets of one parent, only top-level ones, or one status."""
    tickets = await ctx.app.service(TicketService).all(
        ctx.ws, parent_id=args.parent_id, roots_only=args.roots_only, status=args.status
    )
    return TicketList(tickets=[TicketView.model_validate(t) for t in tickets])


class TicketRef(WsArgs):
    ticket_id: str


@op("tickets.get", kind="read", scope="workspace")
async def tickets_get(ctx: OpContext, args: TicketRef) -> TicketDetail:
    """One ticket with its direct sub-tickets."""
    svc = ctx.app.service(TicketService)
    ticket = await svc.get(ctx.ws, args.ticket_id)
    subs = [TicketView.model_validate(s) for s in await svc.all(ctx.ws, parent_id=ticket.id)]
    return TicketDetail.model_validate({**vars(ticket), "sub_tickets": subs})


class TicketUpdateArgs(WsArgs):
    ticket_id: str
    title: str | None = None
    description: str | None = None
    status: str | None = None
    parent_id: str | None = None
    detach: bool = False


@op("tickets.update", kind="mutate", scope="workspace")
async def tickets_update(ctx: OpContext, args: TicketUpdateArgs) -> TicketView:
    """Edit a ticket: title, description, status, or its parent (``detach`` makes it top-level)."""
    ticket = await ctx.app.service(TicketService).update(
        ctx.ws,
        args.ticket_id,
        title=args.title,
        description=args.description,
        status=args.status,
        parent_id=args.parent_id,
        detach=args.detach,
    )
    await ctx.audit("tickets.update", f"ticket:{ticket.id}", {"status": ticket.status})
    return TicketView.model_validate(ticket)


@op("tickets.delete", kind="destructive", scope="workspace")
async def tickets_delete(ctx: OpContext, args: TicketRef) -> TicketsDeleted:
    """Delete a ticket and its sub-tickets."""
    count = await ctx.app.service(TicketService).delete(ctx.ws, args.ticket_id)
    await ctx.audit("tickets.delete", f"ticket:{args.ticket_id}", {"deleted": count})
    return TicketsDeleted(deleted=count)


# ---- repos and worktrees


class RepoRegisterArgs(WsArgs):
    path: str | None = None
    url: str | None = None
    name: str | None = None


@op(
    "repos.register",
    kind="mutate",
    scope="workspace",
    min_role="admin",
    actions=["networkEgress", "processSpawn"],
)
async def repos_register(ctx: OpContext, args: RepoRegisterArgs) -> RepoView:
    """Register a workspace repo from a local git repository (``path``) or a clone URL (``url``). The clone runs as
    the server: a workspace admin's may not use its SSH identity (ssh URLs only to hosts ``trustedRepoHosts``
    names), reach its loopback, own, link-local or private addresses, or read its disk (only under
    ``localRepoRoots``); the server owner's may."""
    repo = await ctx.app.service(RepoService).register(
        ctx.ws, path=args.path, url=args.url, name=args.name, by_owner=ctx.principal.is_server_owner
    )
    await ctx.audit("repos.register", f"repo:{repo.id}", {"name": repo.name, "source": repo.source})
    return RepoView.model_validate(repo)


@op("repos.list", kind="read", scope="workspace")
async def repos_list(ctx: OpContext, args: NoArgs) -> RepoList:
    """List the workspace's repos."""
    return RepoList(repos=[RepoView.model_validate(r) for r in await ctx.app.service(RepoService).all(ctx.ws)])


class RepoRef(WsArgs):
    repo_id: str


@op("repos.get", kind="read", scope="workspace")
async def repos_get(ctx: OpContext, args: RepoRef) -> RepoView:
    """One repo (by id or name)."""
    return RepoView.model_validate(await ctx.app.service(RepoService).get(ctx.ws, args.repo_id))


@op("repos.remove", kind="destructive", scope="workspace", min_role="admin")
async def repos_remove(ctx: OpContext, args: RepoRef) -> RepoRemoved:
    """Forget a repo and delete its clone; refused while worktrees of it exist."""
    repo = await ctx.app.service(RepoService).remove(ctx.ws, args.repo_id)
    await ctx.audit("repos.remove", f"repo:{repo.id}", {"name": repo.name})
    return RepoRemoved(removed=repo.id)


class WorktreeOwner(WsArgs):
    space_id: str | None = None
    ticket_id: str | None = None
    repo_full_name: str | None = None
    pr_number: int | None = None

    def pr(self) -> str | None:
        if (self.repo_full_name is None) != (self.pr_number is None):
            raise InvalidArgs("give repoFullName and prNumber together", field="prNumber")
        return pr_key(self.repo_full_name, self.pr_number) if self.repo_full_name and self.pr_number else None


class WorktreeListArgs(WorktreeOwner):
    pass


@op("worktrees.list", kind="read", scope="workspace")
async def worktrees_list(ctx: OpContext, args: WorktreeListArgs) -> WorktreeList:
    """List worktrees, optionally those of one space, ticket or PR."""
    wts = await ctx.app.service(WorktreeService).all(
        ctx.ws, space_id=args.space_id, ticket_id=args.ticket_id, pr=args.pr()
    )
    paths = shows_paths(ctx)
    return WorktreeList(worktrees=[WorktreeView.of(w, show_path=paths) for w in wts])


class WorktreeAddArgs(WorktreeOwner):
    repo: str = Field(description="<repoId>, <repoId>@<branch> or <repoId>#<pullRequestNumber>")


@op("worktrees.add", kind="mutate", scope="workspace", actions=["processSpawn"])
async def worktrees_add(ctx: OpContext, args: WorktreeAddArgs) -> WorktreeView:
    """Check out ``<repoId>``, ``<repoId>@<branch>`` or ``<repoId>#<number>`` (a pull request) for a space, a
    ticket, or a PR editor."""
    wt = await ctx.app.service(WorktreeService).checkout(
        ctx.ws, args.repo, space_id=args.space_id, ticket_id=args.ticket_id, pr=args.pr(), field="repo"
    )
    await ctx.audit("worktrees.add", f"worktree:{wt.id}", {"path": wt.path, "branch": wt.branch})
    return WorktreeView.of(wt)


class WorktreeCleanupArgs(WorktreeOwner):
    dry_run: bool = False


@op("worktrees.cleanup", kind="destructive", scope="workspace", actions=["processSpawn"])
async def worktrees_cleanup(ctx: OpContext, args: WorktreeCleanupArgs) -> CleanupView:
    """Release a ticket's, a PR editor's or a space's worktrees; with no owner, sweep the workspace."""
    report = await ctx.app.service(WorktreeService).cleanup(
        ctx.ws, ticket_id=args.ticket_id, pr=args.pr(), space_id=args.space_id, dry_run=args.dry_run
    )
    view = CleanupView.model_validate(report)
    if not args.dry_run:
        await ctx.audit("worktrees.cleanup", f"workspace:{ctx.ws}", to_wire(view))
    return view


WORK_OPS: list[OpFunction] = [
    tickets_create,
    tickets_list,
    tickets_get,
    tickets_update,
    tickets_delete,
    repos_register,
    repos_list,
    repos_get,
    repos_remove,
    worktrees_list,
    worktrees_add,
    worktrees_cleanup,
]
