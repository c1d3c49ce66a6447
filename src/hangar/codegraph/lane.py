"""How a ``code.index`` step on a ``hangar worker`` reads the commit it indexes: the repository's bare clone lies
in the data directory of the server that registered it, so the worker asks that server for a git bundle of the
branch, through the worker lane (``hangar.pipelines.worker_lane``: its worker credential and the try it holds).

- Server: ``POST /worker/code-bundle/<workspace id>`` with ``{repoId, localPath, have?}`` (at most 4,096 bytes).
  The repo and the checkout are looked up in the records exactly as the body does in a server (the path is the
  clone's or one of the repo's worktrees, compared as text, never opened); the answer names the commit the
  checkout's branch points at in ``X-Hangar-Commit`` and carries ``git bundle create`` of that branch, without
  what ``have`` (the commit the worker fetched last time, when the clone has it) already holds; ``204`` when the
  worker has the commit already.
- Worker: a bare repository of its own, ``<worker dataDir>/<workspace id>/code-mirrors/<repo id>.git``, into
  which the bundle is unbundled (``git bundle unbundle``: no transport), then indexed as the server indexes its
  clone. Nothing in it is checked out.
"""

from __future__ import annotations

import contextlib
import json
import re
import tempfile
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import Route

from hangar.core.context import AppContext
from hangar.core.ids import new_id
from hangar.errors import InvalidArgs, NotFound, Unavailable
from hangar.httpkit.requests import read_body
from hangar.pipelines import StepContext, claim_of, lane_of
from hangar.workspace import (
    GitFailed,
    Repo,
    RepoService,
    WorktreeService,
    bundle_branch,
    open_mirror,
    resolve_commit,
    unbundle,
)

BUNDLE_PATH = "/worker/code-bundle/"
COMMIT_HEADER = "X-Hangar-Commit"
BODY_MAX = 4096  # bytes of a request: two ids, a path and a commit
BUNDLE_MAX = 4 << 30  # bytes of a bundle a worker takes (a repository's whole history, the first time)
MIRROR_REF = "refs/hangar/indexed"  # the commit a worker's copy indexed last (what it has)
_COMMIT = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")


class BundleAsk(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    repo_id: str = Field(alias="repoId", min_length=1, max_length=200)
    local_path: str = Field(alias="localPath", min_length=1, max_length=2000)
    have: str | None = Field(default=None, pattern=_COMMIT.pattern)


async def repo_of(app: AppContext, ws: str, ref: str, field: str) -> Repo:
    """The workspace repo ``ref`` names (id or name); ``InvalidArgs`` naming ``field`` when none."""
    try:
        return await app.service(RepoService).get(ws, ref)
    except NotFound as exc:
        raise InvalidArgs(f"{field}: {exc.message}", field=field) from exc


async def branch_of(app: AppContext, ws: str, repo: Repo, local_path: str, field: str) -> str:
    """The branch whose commit is indexed: the checkout at ``local_path`` must be the repo's, by the records."""
    repos = app.service(RepoService)
    # Compared as text, never resolved: the path is not opened, only matched against the records.
    wanted = Path(local_path)
    if wanted == repos.clone_path(ws, repo.id):
        return repo.default_branch
    for wt in await app.service(WorktreeService).all(ws):
        if wt.repo_id == repo.id and Path(wt.path) == wanted:
            return wt.work_branch
    raise InvalidArgs(
        f"{field} {local_path!r} is neither repo {repo.name}'s clone nor one of its worktrees", field=field
    )


async def code_bundle(request: Request) -> Response:
    """A bundle of the branch a checkout of a workspace repo points at, for a worker's ``code.index`` try."""
    app: AppContext = request.app.state.ctx
    ws = request.path_params["workspace_id"]
    await claim_of(request, ws)
    try:
        ask = BundleAsk.model_validate(json.loads(await read_body(request, BODY_MAX) or b"null"))
    except (ValueError, ValidationError) as exc:
        raise InvalidArgs(f"the request is not {{repoId, localPath, have?}} ({type(exc).__name__})") from None
    repo = await repo_of(app, ws, ask.repo_id, "repoId")
    branch = await branch_of(app, ws, repo, ask.local_path, "localPath")
    clone = app.service(RepoService).clone_path(ws, repo.id)
    commit = await resolve_commit(clone, branch, field="localPath")
    if ask.have == commit:
        return Response(status_code=204, headers={COMMIT_HEADER: commit})
    scratch = Path(tempfile.mkdtemp(prefix="hangar-bundle-"))
    bundle = scratch / "index.bundle"
    # The branch may move on meanwhile: the bundle then holds the newer commit too, which has ``commit`` in it.
    try:
        try:
            await bundle_branch(clone, branch, ask.have, bundle)
        except GitFailed:
            if ask.have is None:
                raise
            # The branch was rewound past what the worker has (nothing new to send): the whole branch then.
            await bundle_branch(clone, branch, None, bundle)
    except GitFailed as exc:
        _discard(scratch)
        raise Unavailable(f"cannot bundle repo {repo.name}: {exc.reason}") from None
    return FileResponse(
        bundle,
        media_type="application/octet-stream",
        headers={COMMIT_HEADER: commit},
        background=BackgroundTask(_discard, scratch),
    )


def _discard(scratch: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        for child in scratch.iterdir():
            child.unlink()
        scratch.rmdir()


async def fetched(step: StepContext, repo: Repo, local_path: str) -> tuple[Path, str]:
    """On a worker: this worker's copy of the repo holding the commit the checkout's branch points at, and the
    commit, brought from the server (see the module docstring)."""
    lane = lane_of(step.app, f"repo {repo.name}'s clone")
    mirror = step.app.datadir.workspace_dir(step.workspace_id) / "code-mirrors" / f"{repo.id}.git"
    have = await open_mirror(mirror, MIRROR_REF)
    bundle = mirror / f"incoming-{new_id()}.bundle"
    try:
        ask = {"repoId": repo.id, "localPath": local_path, "have": have}
        path = f"{BUNDLE_PATH}{step.workspace_id}"
        headers, size = await lane.download("POST", path, step.try_key, bundle, BUNDLE_MAX, json=ask)
        commit = headers.get(COMMIT_HEADER, "")
        if not _COMMIT.match(commit):
            raise Unavailable(f"the server named no commit of repo {repo.name}")
        if not await unbundle(mirror, bundle if size else None, commit, MIRROR_REF):
            raise Unavailable(f"the server's bundle of repo {repo.name} lacks commit {commit[:12]} (it moved)")
    finally:
        bundle.unlink(missing_ok=True)
    return mirror, commit


ROUTES = [Route(BUNDLE_PATH + "{workspace_id}", code_bundle, methods=["POST"])]
