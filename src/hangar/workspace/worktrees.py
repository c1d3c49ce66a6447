"""Worktrees: checkouts of workspace repos for a space, a ticket, or a pull-request editor, and their cleanup.

A space's worktrees live in its working folder (``<folder>/<repoName>``); a ticket's under
``<dataDir>/<ws>/worktrees/tickets/<ticketId>/``; a PR editor's under ``<dataDir>/<ws>/worktrees/pr/<key>/``.
Each worktree checks out its own work branch (``hangar/<owner>``) started from the requested branch, so agents
can commit without touching the source's branches. A pull request (``<repoId>#<number>``) is fetched from the
repo's origin into the local branch ``pr/<number>`` first, and the work branch starts from there.

Provisioning a space also runs each checked-out repo's setup script (``hangar.workspace.setup_script``), confined.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import re
import shutil
import stat
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from hangar.core.beneath import anchored, copy_new, lstat_beneath, opened, remove_path, rename_noreplace
from hangar.core.confine import OnWait, Wait
from hangar.core.context import AppContext
from hangar.core.disks import ScopeDisks
from hangar.core.guestacl import grant_tree, grants_guest
from hangar.core.ids import new_id
from hangar.core.paths import contained
from hangar.errors import Conflict, InvalidArgs, NotFound
from hangar.workspace import tables
from hangar.workspace.folders import make_folder
from hangar.workspace.git import GitFailed, git
from hangar.workspace.repos import Repo, RepoService, parse_repo_spec
from hangar.workspace.results import CleanupView, WorktreeView
from hangar.workspace.setup_script import has_setup_script, run_setup_script
from hangar.workspace.spaces import SpaceService
from hangar.workspace.tickets import TicketService

log = logging.getLogger(__name__)

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
STAGING = ".staging"  # <dataDir>/<ws>/worktrees/.staging/<id>/: checkouts before they move into their folder


@dataclass(frozen=True)
class Worktree:
    id: str
    repo_id: str
    branch: str
    work_branch: str
    path: str
    space_id: str | None
    ticket_id: str | None
    pr_key: str | None
    created_at: datetime

    def to_wire(self) -> dict[str, Any]:
        return WorktreeView.of(self).model_dump(mode="json", by_alias=True)


@dataclass
class CleanupReport:
    mode: str
    dry_run: bool
    worktrees: list[str] = field(default_factory=list)
    folders: list[str] = field(default_factory=list)

    @property
    def summary(self) -> str:
        verb = "would release" if self.dry_run else "released"
        rm = "would remove" if self.dry_run else "removed"
        return f"{self.mode}: {verb} {len(self.worktrees)} worktree(s), {rm} {len(self.folders)} folder(s)" + (
            " (dry run)" if self.dry_run else ""
        )

    def to_wire(self) -> dict[str, Any]:
        return CleanupView.model_validate(self).model_dump(mode="json", by_alias=True)


def pr_key(repo_full_name: str, pr_number: int | str) -> str:
    return f"{repo_full_name}#{pr_number}"


class WorktreeService:
    def __init__(self, app: AppContext, spaces: SpaceService, repos: RepoService) -> None:
        self._app = app
        self._spaces = spaces
        self._repos = repos

    async def checkout(
        self,
        workspace_id: str,
        spec: str,
        *,
        space_id: str | None = None,
        ticket_id: str | None = None,
        pr: str | None = None,
        field: str = "repoIds",
        on_pr_checkout: Callable[[Repo], Awaitable[None]] | None = None,
    ) -> Worktree:
        """Check out ``<repoId>``, ``<repoId>@<branch>`` or ``<repoId>#<number>`` for exactly one owner (space,
        ticket or PR key). ``on_pr_checkout`` is told before a pull request is fetched (provisioning narrates it)."""
        owners = [o for o in (space_id, ticket_id, pr) if o is not None]
        if len(owners) != 1:
            raise InvalidArgs("a worktree belongs to exactly one of a space, a ticket or a PR", field="owner")
        wanted = parse_repo_spec(spec, field)
        repo = await self._repos.get(workspace_id, wanted.ref)
        await self._repos.refresh(workspace_id, repo, field)
        if wanted.pr is not None:
            if on_pr_checkout is not None:
                await on_pr_checkout(repo)
            branch = await self._repos.fetch_pull_request(workspace_id, repo, wanted.pr, field)
        else:
            branch = wanted.branch or repo.default_branch
        if not await self._repos.has_branch(workspace_id, repo, branch):
            raise InvalidArgs(f"{field}: branch {branch!r} does not exist in repo {repo.name}", field=field)
        ws_dir = self._app.datadir.workspace_dir(workspace_id)
        if space_id is not None:
            await self._spaces.get(workspace_id, space_id)
            base, owner = self._spaces.folder(workspace_id, space_id), f"space-{space_id}"
        elif ticket_id is not None:
            await self._app.service(TicketService).get(workspace_id, ticket_id)
            base = contained(ws_dir / "worktrees" / "tickets", ticket_id, field="ticketId")
            owner = f"ticket-{ticket_id}"
        else:
            assert pr is not None
            safe = _UNSAFE.sub("-", pr).strip("-")
            base, owner = contained(ws_dir / "worktrees" / "pr", safe, field="pr"), f"pr-{safe}"
        for existing in await self.all(workspace_id, space_id=space_id, ticket_id=ticket_id, pr=pr):
            if existing.repo_id == repo.id:
                raise Conflict(f"repo {repo.name} is already checked out there ({existing.path})")
        if space_id is not None:
            await self._bound_space_folder(workspace_id, space_id, base)
        path = contained(base, repo.name, field=field)
        await make_folder(self._app, workspace_id, base)
        if await asyncio.to_thread(_occupied, path):  # anything at all, a symlink included
            raise Conflict(f"{path} already exists; release or remove it first")
        work_branch = f"hangar/{owner}"
        clone = self._repos.clone_path(workspace_id, repo.id)
        # Checked out where only the server writes, then moved into place beneath the owner's folder's descriptor:
        # git never writes by name into a folder a space's guests can change (a symlink there would be followed).
        staging = ws_dir / "worktrees" / STAGING / new_id()
        await make_folder(self._app, workspace_id, staging)
        try:
            try:
                await git(
                    "worktree", "add", "--quiet", "-B", work_branch, str(staging / repo.name), branch, git_dir=clone
                )  # fmt: skip
            except GitFailed as exc:
                raise InvalidArgs(
                    f"{field}: {repo.name}@{branch} cannot be checked out: {exc.reason}", field=field
                ) from exc
            try:
                await asyncio.to_thread(_move_into_place, clone, staging / repo.name, path)
            except FileExistsError:
                await asyncio.to_thread(remove_path, staging / repo.name)
                await git("worktree", "prune", git_dir=clone)
                raise Conflict(f"{path} already exists; release or remove it first") from None
        finally:
            await asyncio.to_thread(remove_path, staging)
        wt = Worktree(
            id=new_id(),
            repo_id=repo.id,
            branch=branch,
            work_branch=work_branch,
            path=str(path),
            space_id=space_id,
            ticket_id=ticket_id,
            pr_key=pr,
            created_at=self._app.clock.now(),
        )
        engine = await self._app.dbs.workspace(workspace_id)
        async with engine.begin() as conn:
            await conn.execute(sa.insert(tables.worktrees).values(**wt.__dict__))
        return wt

    async def _bound_space_folder(self, workspace_id: str, space_id: str, folder: Path) -> None:
        """The space's folder gets its disk before anything is checked out into it: its enclosure writes there
        (``hangar.core.disks``), and a folder already holding files could no longer be given one."""
        disks = self._app.maybe_service(ScopeDisks)
        if disks is not None:
            await disks.ensure(folder)

    async def check_specs(self, workspace_id: str, specs: list[str], field: str = "repoIds") -> None:
        """Every spec names a registered repo (before a space is opened for them); branches are checked when
        they are checked out."""
        for spec in specs:
            try:
                await self._repos.get(workspace_id, parse_repo_spec(spec, field).ref)
            except NotFound as exc:
                raise NotFound(f"{field}: {exc.message}") from None

    async def provision_space(
        self, workspace_id: str, space_id: str, specs: list[str], *, all_repos: bool = False
    ) -> list[Worktree]:
        """Check out a space's repos and run their setup scripts, narrating progress through
        ``SpaceProvisioningChanged`` (steps ``repo``, ``prCheckout`` and ``script``, each naming the repo).

        ``all_repos`` adds every registered repo not named in ``specs`` (at its default branch). Repos the space
        already has are not checked out again, so provisioning again finishes what an interrupted or failed attempt
        began; their setup scripts do run again (an attempt may have stopped inside one), so a setup script should
        be safe to repeat. A failure marks the space ``failed`` with the reason and re-raises; worktrees already
        made stay recorded.
        """
        wanted = list(specs)
        if all_repos:
            named = {parse_repo_spec(s).ref for s in specs}
            wanted += [r.id for r in await self._repos.all(workspace_id) if r.id not in named and r.name not in named]
        made: list[Worktree] = []
        present = {w.repo_id: w for w in await self.all(workspace_id, space_id=space_id)}

        async def step(name: str, repo: Repo) -> None:
            await self._spaces.set_provisioning(workspace_id, space_id, "provisioning", step=name, detail=repo.name)

        try:
            for spec in wanted:
                repo: Repo = await self._repos.get(workspace_id, parse_repo_spec(spec).ref)
                wt = present.get(repo.id)  # checked out by an earlier, interrupted attempt
                if wt is None:
                    await step("repo", repo)
                    wt = await self.checkout(
                        workspace_id, spec, space_id=space_id, on_pr_checkout=lambda r: step("prCheckout", r)
                    )
                    made.append(wt)
                folder = self._spaces.folder(workspace_id, space_id)
                if await asyncio.to_thread(has_setup_script, folder, repo.name):
                    await step("script", repo)
                    await run_setup_script(
                        self._app,
                        workspace_id,
                        space_id,
                        folder,
                        repo.name,
                        on_wait=self._script_waits(workspace_id, space_id, repo),
                    )
        except Exception as exc:
            reason = getattr(exc, "message", None) or str(exc)
            await self._spaces.set_provisioning(workspace_id, space_id, "failed", error=reason)
            raise
        await self._spaces.set_provisioning(workspace_id, space_id, "ready")
        return made

    def _script_waits(self, workspace_id: str, space_id: str, repo: Repo) -> OnWait:
        """A setup script's wait for its enclosure (the terminal image's build, the boot), in the space's setup."""

        async def said(wait: Wait) -> None:
            detail = repo.name if wait.over else f"{repo.name}: waiting for {wait.text}"
            await self._spaces.set_provisioning(workspace_id, space_id, "provisioning", step="script", detail=detail)

        return said

    async def all(
        self,
        workspace_id: str,
        *,
        space_id: str | None = None,
        ticket_id: str | None = None,
        pr: str | None = None,
    ) -> list[Worktree]:
        t = tables.worktrees
        q = sa.select(t).order_by(t.c.created_at, t.c.id)
        if space_id is not None:
            q = q.where(t.c.space_id == space_id)
        if ticket_id is not None:
            q = q.where(t.c.ticket_id == ticket_id)
        if pr is not None:
            q = q.where(t.c.pr_key == pr)
        engine = await self._app.dbs.workspace(workspace_id)
        async with engine.connect() as conn:
            rows = (await conn.execute(q)).mappings().all()
        return [Worktree(**dict(r)) for r in rows]

    async def release(self, workspace_id: str, wt: Worktree) -> None:
        """Remove the worktree's directory, its git bookkeeping and its work branch, then forget it. The directory is
        removed beneath its owner's folder without following anything in it; git only touches the clone."""
        clone = self._repos.clone_path(workspace_id, wt.repo_id)
        try:
            await asyncio.to_thread(remove_path, Path(wt.path))
        except OSError as exc:  # a live enclosure kept writing in it: the space's cleanup removes what is left
            log.warning("worktree %s: its folder could not be removed (%s)", wt.id, exc.strerror or exc)
        if clone.exists():
            await asyncio.to_thread(_forget_checkout, clone, Path(wt.path))
            await git("worktree", "prune", git_dir=clone)
            with contextlib.suppress(GitFailed):
                await git("branch", "-D", wt.work_branch, git_dir=clone)
        engine = await self._app.dbs.workspace(workspace_id)
        async with engine.begin() as conn:
            await conn.execute(sa.delete(tables.worktrees).where(tables.worktrees.c.id == wt.id))

    async def _remove_folder(self, workspace_id: str, folder: Path) -> None:
        """A space folder goes with its disk; what a guest wrote there is removed without following symlinks,
        off the event loop."""
        disks = self._app.maybe_service(ScopeDisks)
        if disks is not None:
            await disks.remove(folder)
            return
        # A live enclosure of the space may still write in it: removed without following anything.
        with contextlib.suppress(OSError):
            await asyncio.to_thread(remove_path, folder)

    async def cleanup(
        self,
        workspace_id: str,
        *,
        ticket_id: str | None = None,
        pr: str | None = None,
        space_id: str | None = None,
        dry_run: bool = False,
    ) -> CleanupReport:
        """Release one owner's worktrees, or with no owner sweep the workspace: worktrees whose directory
        vanished, worktrees of archived or deleted spaces, and space folders with no live space."""
        if ticket_id is not None:
            report = CleanupReport("ticket", dry_run)
            doomed = await self.all(workspace_id, ticket_id=ticket_id)
        elif pr is not None:
            report = CleanupReport("prEditor", dry_run)
            doomed = await self.all(workspace_id, pr=pr)
        elif space_id is not None:
            await self._spaces.get(workspace_id, space_id)  # an existing space of this workspace, never a path
            report = CleanupReport("space", dry_run)
            doomed = await self.all(workspace_id, space_id=space_id)
            folder = self._spaces.folder(workspace_id, space_id)
            if folder.exists():
                report.folders.append(str(folder))
        else:
            report = CleanupReport("sweep", dry_run)
            live = {s.id for s in await self._spaces.all(workspace_id, include_hidden=True)}
            doomed = [
                wt
                for wt in await self.all(workspace_id)
                if (wt.space_id is not None and wt.space_id not in live)
                or not await asyncio.to_thread(_is_directory, Path(wt.path))  # gone, or swapped for a symlink
            ]
            spaces_dir = self._app.datadir.workspace_dir(workspace_id) / "spaces"
            if spaces_dir.is_dir():
                report.folders += [
                    str(p)
                    for p in sorted(spaces_dir.iterdir())
                    if p.is_dir() and not p.is_symlink() and p.name not in live
                ]
        report.worktrees = [wt.path for wt in doomed]
        if not dry_run:
            for wt in doomed:
                await self.release(workspace_id, wt)
            for folder_path in report.folders:
                await self._remove_folder(workspace_id, Path(folder_path))
        return report


def _occupied(path: Path) -> bool:
    """Whether anything (a symlink included, never followed) is at ``path`` in its server-made folder."""
    try:
        with anchored(path.parent) as folder:
            return lstat_beneath(folder, path.name) is not None
    except FileNotFoundError:
        return False


def _is_directory(path: Path) -> bool:
    """Whether ``path`` is still a directory in its server-made folder (a symlink there is not)."""
    try:
        with anchored(path.parent) as folder:
            found = lstat_beneath(folder, path.name)
    except OSError:
        return False
    return found is not None and stat.S_ISDIR(found.st_mode)


def _admin_dir(staged: Path, clone: Path) -> Path:
    """The clone's bookkeeping folder for a checkout git just made (its ``.git`` file, written by git where only
    the server writes, names it), checked to lie in the clone's ``worktrees``."""
    text = (staged / ".git").read_text().strip()
    admin = Path(text.removeprefix("gitdir:").strip())
    if not text.startswith("gitdir:") or admin.parent != clone / "worktrees":
        raise GitFailed("git worktree add left an unexpected .git file", text)
    return admin


def _move_into_place(clone: Path, staged: Path, path: Path) -> None:
    """Move a checkout from staging to ``path`` (never over anything there: ``FileExistsError``), then point the
    clone's record of it at its new place (``worktrees/<name>/gitdir``, git's documented back-link)."""
    admin = _admin_dir(staged, clone)
    with anchored(staged.parent) as src, anchored(path.parent) as dst:
        # Made elsewhere, the checkout lacks what it would have inherited from the folder's default ACL (the rig
        # user's write access, where an enclosure of the space has the folder): given before it is moved.
        granted = grants_guest(dst)
        if granted:
            with opened(src, staged.name, os.O_RDONLY | os.O_DIRECTORY) as tree:
                grant_tree(tree)
        try:
            rename_noreplace(src, staged.name, dst, path.name)
        except OSError as exc:
            if exc.errno != errno.EXDEV:
                raise
            # The space's folder is a disk of its own (``hangar.core.disks``): copied across, beneath descriptors,
            # into a folder no guest can enter until the copy is whole and granted.
            copy_new(src, staged.name, dst, path.name)
            if granted:
                with opened(dst, path.name, os.O_RDONLY | os.O_DIRECTORY) as tree:
                    grant_tree(tree)
    tmp = admin / "gitdir.tmp"
    tmp.write_text(f"{path}/.git\n")
    os.replace(tmp, admin / "gitdir")


def _forget_checkout(clone: Path, path: Path) -> None:
    """Drop the clone's bookkeeping of the checkout at ``path``, found by the back-link the clone holds (never by
    the worktree's ``.git`` file, which the space's guests can rewrite)."""
    records = clone / "worktrees"
    if not records.is_dir():
        return
    for admin in records.iterdir():
        with contextlib.suppress(OSError):
            if (admin / "gitdir").read_text().strip() == f"{path}/.git":
                shutil.rmtree(admin)
