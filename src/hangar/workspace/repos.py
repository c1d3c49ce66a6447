"""Workspace repos: a local git repository or a clone URL, kept as a bare clone under the data directory.

Registering always clones (``git clone --bare``), from a local path as from a URL, so per-space worktrees never
write into the user's own repository and every repo behaves the same. The clone runs as the server, so where it
may go depends on who registers the repo (the server owner or a workspace admin; recorded with the repo, since
every later fetch goes there again): ``hangar.workspace.sources`` holds those rules. The clone lives at
``<dataDir>/<workspaceId>/repos/<repoId>.git``; branches are refreshed from the source before each checkout.
"""

from __future__ import annotations

import asyncio
import logging
import re
import shutil
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import sqlalchemy as sa

from hangar.core.context import AppContext
from hangar.core.ids import new_id
from hangar.errors import Conflict, InvalidArgs, NotFound
from hangar.workspace import tables
from hangar.workspace.folders import make_folder
from hangar.workspace.git import GitFailed, Reach, git
from hangar.workspace.sources import LOCAL, may_read, reach

log = logging.getLogger(__name__)

_CREDENTIALS = re.compile(r"^[a-z]+://[^/@\s]*:[^/@\s]*@")
_REDIRECTED = re.compile(r"returned error: 30[1-8]\b")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


@dataclass(frozen=True)
class Repo:
    id: str
    name: str
    source_kind: str
    source: str
    default_branch: str
    created_at: datetime
    # Registered by the server owner: its clone and fetches may use everything the server's user reaches.
    registered_by_owner: bool


def _why(exc: GitFailed, way: Reach) -> str:
    """Git's reason for a failed clone or fetch, said plainly when it is a redirect a workspace admin's clone
    does not follow."""
    if not way.server_identity and _REDIRECTED.search(exc.stderr):
        return (
            f"{exc.reason} (the server answered with a redirect, which a workspace admin's clone does not follow: "
            "register the URL it leads to)"
        )
    return exc.reason


def _default_name(source: str) -> str:
    tail = source.rstrip("/").replace(":", "/").rsplit("/", 1)[-1]
    return tail.removesuffix(".git") or "repo"


class RepoService:
    def __init__(self, app: AppContext) -> None:
        self._app = app

    def clone_path(self, workspace_id: str, repo_id: str) -> Path:
        return self._app.datadir.workspace_dir(workspace_id) / "repos" / f"{repo_id}.git"

    async def register(
        self,
        workspace_id: str,
        *,
        path: str | None = None,
        url: str | None = None,
        name: str | None = None,
        by_owner: bool = False,
    ) -> Repo:
        """Register a repo from a local path or a clone URL (exactly one); clones it before recording it.

        The clone runs as the server, so what it may reach depends on who registers: the server owner
        (``by_owner``) or a workspace admin (``hangar.workspace.sources``; ``Forbidden`` naming the field)."""
        if (path is None) == (url is None):
            raise InvalidArgs("give exactly one of path (a local git repository) or url (a clone URL)", field="url")
        if path is not None:
            source_kind, field = "path", "path"
            local = Path(path).expanduser()  # noqa: ASYNC240 (string manipulation, no I/O)
            if not local.is_absolute():
                raise InvalidArgs(f"path {path!r} must be absolute", field="path")
            local = await may_read(self._app, local, "path", by_owner)
            try:
                await git("rev-parse", "--git-dir", cwd=local, reach=LOCAL)
            except (GitFailed, FileNotFoundError, NotADirectoryError):
                raise InvalidArgs(f"path {path} is not a git repository", field="path") from None
            source, way = str(local), LOCAL
        else:
            assert url is not None
            source_kind, field, source = "url", "url", url.strip()
            if _CREDENTIALS.match(source):
                # A token in the URL would be stored and shown with the repo; secrets live in the secrets file.
                raise InvalidArgs(
                    "url must not carry credentials (user:password@); use a URL without them", field="url"
                )
            way = await reach(self._app, "url", source, by_owner=by_owner, field="url")
        repo_name = name.strip() if name else _default_name(source)
        if not _NAME.match(repo_name):
            raise InvalidArgs(f"name {repo_name!r} must be letters, digits, '.', '_' or '-'", field="name")
        if await self._find_by_name(workspace_id, repo_name) is not None:
            raise Conflict(f"a repo named {repo_name!r} is already registered in this workspace")
        repo_id = new_id()
        dest = self.clone_path(workspace_id, repo_id)
        await make_folder(self._app, workspace_id, dest.parent)
        try:
            await git("clone", "--bare", "--quiet", source, str(dest), limit_s=600, reach=way)
            # Branches of the source land directly under refs/heads, so a later fetch refreshes them in place;
            # Hangar's own work branches (hangar/...) do not exist upstream and are left alone (no prune).
            await git("config", "remote.origin.fetch", "+refs/heads/*:refs/heads/*", git_dir=dest)
            head = (await git("symbolic-ref", "--short", "HEAD", git_dir=dest)).strip()
        except GitFailed as exc:
            await asyncio.to_thread(shutil.rmtree, dest, True)
            raise InvalidArgs(f"{field} {source} cannot be cloned: {_why(exc, way)}", field=field) from exc
        now = self._app.clock.now()
        engine = await self._app.dbs.workspace(workspace_id)
        try:
            async with engine.begin() as conn:
                await conn.execute(
                    sa.insert(tables.repos).values(
                        id=repo_id,
                        name=repo_name,
                        source_kind=source_kind,
                        source=source,
                        default_branch=head or "main",
                        created_at=now,
                        registered_by_owner=by_owner,
                    )
                )
        except sa.exc.IntegrityError as exc:
            # The name was free when checked, but another registration took it while this one cloned (the
            # unique index holds the rule): nothing of this one is kept.
            shutil.rmtree(dest, ignore_errors=True)
            raise Conflict(f"a repo named {repo_name!r} is already registered in this workspace") from exc
        return await self.get(workspace_id, repo_id)

    async def _reach(self, repo: Repo, field: str) -> Reach:
        """How a fetch of ``repo``'s recorded origin may reach it, decided again now (DNS and the settings may
        have changed since it was registered)."""
        kind, owners = repo.source_kind, repo.registered_by_owner
        return await reach(self._app, kind, repo.source, by_owner=owners, field=field, origin_of=repo.name)

    async def _find_by_name(self, workspace_id: str, name: str) -> Repo | None:
        engine = await self._app.dbs.workspace(workspace_id)
        async with engine.connect() as conn:
            row = (await conn.execute(sa.select(tables.repos).where(tables.repos.c.name == name))).mappings().first()
        return Repo(**dict(row)) if row else None

    async def get(self, workspace_id: str, ref: str) -> Repo:
        """A repo by id or by name."""
        engine = await self._app.dbs.workspace(workspace_id)
        t = tables.repos
        async with engine.connect() as conn:
            row = (await conn.execute(sa.select(t).where(sa.or_(t.c.id == ref, t.c.name == ref)))).mappings().first()
        if row is None:
            raise NotFound(f"repo {ref} is not registered in this workspace")
        return Repo(**dict(row))

    async def all(self, workspace_id: str) -> list[Repo]:
        engine = await self._app.dbs.workspace(workspace_id)
        async with engine.connect() as conn:
            rows = (await conn.execute(sa.select(tables.repos).order_by(tables.repos.c.name))).mappings().all()
        return [Repo(**dict(r)) for r in rows]

    async def remove(self, workspace_id: str, ref: str) -> Repo:
        """Forget a repo; refused while worktrees of it are checked out."""
        repo = await self.get(workspace_id, ref)
        engine = await self._app.dbs.workspace(workspace_id)
        async with engine.begin() as conn:
            used = (
                await conn.execute(
                    sa.select(sa.func.count())
                    .select_from(tables.worktrees)
                    .where(tables.worktrees.c.repo_id == repo.id)
                )
            ).scalar()
            if used:
                raise Conflict(f"repo {repo.name} still has {used} worktree(s) checked out; release them first")
            await conn.execute(sa.delete(tables.repos).where(tables.repos.c.id == repo.id))
        # A clone can be big: removed beside the event loop, not in it.
        await asyncio.to_thread(shutil.rmtree, self.clone_path(workspace_id, repo.id), True)
        return repo

    async def refresh(self, workspace_id: str, repo: Repo, field: str = "repoIds") -> None:
        """Fetch the source's branches; a source that cannot be reached leaves the clone as it was, one the rules
        no longer let this repo reach is refused (``Forbidden`` naming ``field``)."""
        try:
            way = await self._reach(repo, field)
        except InvalidArgs as exc:  # the host does not resolve: unreachable, like a fetch that fails
            log.warning("repo %s: its source cannot be reached (%s); using the clone as it is", repo.name, exc.message)
            return
        try:
            clone = self.clone_path(workspace_id, repo.id)
            await git("fetch", "--quiet", "origin", git_dir=clone, limit_s=120, reach=way)
        except GitFailed as exc:
            log.warning("repo %s: fetch from its source failed (%s); using the clone as it is", repo.name, exc.reason)

    async def fetch_pull_request(self, workspace_id: str, repo: Repo, number: int, field: str = "repoIds") -> str:
        """Fetch pull request ``number``'s head from the repo's origin into the local branch ``pr/<number>`` and
        return that branch.

        Forges publish a pull request's head at ``refs/pull/<n>/head`` (GitHub, Gitea and Forgejo do; GitLab's merge
        requests live elsewhere). The forced refspec moves the local branch when the pull request was pushed to
        again. ``number`` is an int, so the refspec holds nothing a person typed.
        """
        branch = f"pr/{int(number)}"
        way = await self._reach(repo, field)
        try:
            await git(
                "fetch", "--quiet", "--no-tags", "origin", f"+refs/pull/{int(number)}/head:refs/heads/{branch}",
                git_dir=self.clone_path(workspace_id, repo.id), limit_s=120, reach=way,
            )  # fmt: skip
        except GitFailed as exc:
            raise InvalidArgs(
                f"{field}: pull request #{number} cannot be fetched from the origin of repo {repo.name}: "
                f"{_why(exc, way)}",
                field=field,
            ) from exc
        return branch

    async def has_branch(self, workspace_id: str, repo: Repo, branch: str) -> bool:
        try:
            clone = self.clone_path(workspace_id, repo.id)
            await git("rev-parse", "--verify", "--quiet", f"refs/heads/{branch}", git_dir=clone)
        except GitFailed:
            return False
        return True


MAX_PR_NUMBER = 10**9  # far above any forge's numbering; keeps the ref name short and the number an int


@dataclass(frozen=True)
class RepoSpec:
    """A parsed repo spec: the repo (id or name) and what to check out, a branch or a pull request (at most one;
    neither means the repo's default branch)."""

    ref: str
    branch: str | None = None
    pr: int | None = None


SPEC_FORMS = "<repoId>, <repoId>@<branch> or <repoId>#<pullRequestNumber>"


def parse_repo_spec(spec: str, field: str = "repoIds") -> RepoSpec:
    """``<repoId>``, ``<repoId>@<branch>`` or ``<repoId>#<number>`` (a pull request of the repo's origin).

    Repo ids and names hold neither ``@`` nor ``#``, so the first ``@`` ends the reference and everything after it
    is the branch (a branch may contain ``#``); without ``@``, a ``#`` introduces a pull-request number.
    """
    text = spec.strip()
    ref, sep, branch = text.partition("@")
    if sep:
        if not ref or not branch or "#" in ref:
            raise InvalidArgs(f"{field}: {spec!r} must be {SPEC_FORMS}", field=field)
        return RepoSpec(ref, branch=branch)
    ref, sep, number = text.partition("#")
    if not ref:
        raise InvalidArgs(f"{field}: {spec!r} must be {SPEC_FORMS}", field=field)
    if not sep:
        return RepoSpec(ref)
    if not (number.isascii() and number.isdigit()) or not 0 < int(number) < MAX_PR_NUMBER:
        raise InvalidArgs(
            f"{field}: {spec!r}: the pull request number {number!r} must be a whole number from 1 to "
            f"{MAX_PR_NUMBER - 1}",
            field=field,
        )
    return RepoSpec(ref, pr=int(number))
