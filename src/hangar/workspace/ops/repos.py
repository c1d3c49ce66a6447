"""Ops on the workspace's repos (``repos.*``) and the worktrees checked out of them (``worktrees.*``)."""

from __future__ import annotations

from pydantic import Field

from hangar.core.part import OpFunction
from hangar.errors import InvalidArgs
from hangar.rpc.context import OpContext
from hangar.rpc.registry import Args, NoArgs, op, to_wire
from hangar.workspace.ops.spaces import shows_paths
from hangar.workspace.repos import RepoService
from hangar.workspace.results import (
    CleanupView,
    RepoList,
    RepoRemoved,
    RepoView,
    WorktreeList,
    WorktreeView,
)
from hangar.workspace.worktrees import WorktreeService, pr_key


class RepoRegisterArgs(Args):
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


class RepoRef(Args):
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


class WorktreeOwner(Args):
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


OPS: list[OpFunction] = [
    repos_register,
    repos_list,
    repos_get,
    repos_remove,
    worktrees_list,
    worktrees_add,
    worktrees_cleanup,
]
