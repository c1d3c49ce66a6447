"""``code.index``: the code indexing body.

State keys ``repo_id`` (a workspace repo, by id or name) and ``repo_local_path`` (where the repo is checked out:
the repo's own clone, or one of its worktrees), both required. Both are looked up in the server's records: the
path must be the clone's or a worktree's of that repo as recorded, and it is never opened; the files indexed are
those of the commit the checkout's branch points at (the clone's default branch, a worktree's work branch), read
from the server's clone (``hangar.workspace.snapshots``), so what a space's guests wrote into the checkout is
never walked. Uncommitted changes are not indexed. On a ``hangar worker`` the commit is brought from the server
that holds the clone as a git bundle (``hangar.codegraph.lane``) and indexed from the worker's own copy.

Only files whose content changed since the repo's last indexed commit are parsed again; files gone are dropped.
Progress (``{phase, files, of, symbols, edges, lines}``) streams into the step-run row. A dry run lists what would
be parsed and writes nothing. A grammar that fails to resolve fails the step and leaves the earlier graph as it
was. Writes ``code_index`` (the run's report) to state. A run also drops the graphs of repos removed from the
workspace since.

Limits (node config ``extras``): ``maxFileBytes`` (default 1 MiB, at most 16 MiB): a larger file is skipped with a
note; ``timeoutMs`` (default 10 s, at most 60 s): a file whose parse takes longer is skipped with a note;
``workers`` (default 2, at most 8): parsing processes.
"""

from __future__ import annotations

import shutil
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.codegraph import store
from hangar.codegraph.indexer import IndexLimits, index_commit
from hangar.codegraph.lane import branch_of, fetched, repo_of
from hangar.codegraph.pool import GrammarFailed, ParserPool
from hangar.core.confine import trusted_host_exec
from hangar.errors import InvalidArgs, Unavailable
from hangar.pipelines import DRY_RUN_KEY, ConfigField, StepContext, StepResult, body, extra_count
from hangar.workspace import RepoService, resolve_commit

REPO_ID_KEY = "repo_id"
REPO_PATH_KEY = "repo_local_path"
OUTPUT_KEY = "code_index"
MAX_FILE_BYTES_CEILING = 16 << 20
TIMEOUT_MS_CEILING = 60_000
WORKERS_CEILING = 8


def limits_of(extras: dict[str, Any]) -> IndexLimits:
    base = IndexLimits()
    return IndexLimits(
        max_file_bytes=extra_count(extras, "maxFileBytes", base.max_file_bytes, MAX_FILE_BYTES_CEILING),
        timeout_s=extra_count(extras, "timeoutMs", int(base.timeout_s * 1000), TIMEOUT_MS_CEILING) / 1000,
        workers=extra_count(extras, "workers", base.workers, WORKERS_CEILING),
    )


def _required(step: StepContext, key: str) -> str:
    if not step.has(key):
        raise InvalidArgs(f"state has no {key}: code indexing needs {REPO_ID_KEY} and {REPO_PATH_KEY}", field=key)
    value = step.lookup(key)
    if not isinstance(value, str) or not value.strip() or "\x00" in value:
        raise InvalidArgs(f"{key} must be a non-empty string without NUL characters", field=key)
    return value.strip()


async def confined_parsing(step: StepContext) -> bool:
    """Workers run in bubblewrap; on the host only where it is missing and the owner trusts host execution."""
    return shutil.which("bwrap") is not None or not await trusted_host_exec(step.app)


async def _forget_removed(step: StepContext, engine: AsyncEngine) -> None:
    """Drop the graphs of repos removed from the workspace since (the workspace part removes a repo without telling
    other parts; no op reads such a graph, but its rows would stay for good)."""
    present = {r.id for r in await step.app.service(RepoService).all(step.workspace_id)}
    for state in await store.all_states(engine):
        if state.repo_id not in present:
            await store.forget(engine, state.repo_id)


@body(
    "code.index",
    summary="Indexes a repo's symbols and edges into the workspace code graph, parsing only what changed.",
    config=[
        ConfigField("state.repo_id", "The workspace repo to index (id or name)"),
        ConfigField("state.repo_local_path", "Its checkout: the repo's clone or one of its worktrees"),
        ConfigField("extras.maxFileBytes", "Files larger than this are skipped with a note (default 1 MiB)"),
        ConfigField("extras.timeoutMs", "A parse taking longer is skipped with a note (default 10000)"),
        ConfigField("extras.workers", "Parsing processes (default 2, at most 8)"),
    ],
    honours_dry_run=True,
    on_worker=True,
    needs_server=True,
)
async def code_index(step: StepContext) -> StepResult:
    repo_ref, local_path = _required(step, REPO_ID_KEY), _required(step, REPO_PATH_KEY)
    limits = limits_of(dict(step.config.extras))
    repo = await repo_of(step.app, step.workspace_id, repo_ref, REPO_ID_KEY)
    if step.on_worker:
        # The clone lies with the server, which checks the checkout against its records as below and sends the
        # branch's commits: this worker indexes its own copy of them.
        git_dir, commit = await fetched(step, repo, local_path)
    else:
        branch = await branch_of(step.app, step.workspace_id, repo, local_path, REPO_PATH_KEY)
        git_dir = step.app.service(RepoService).clone_path(step.workspace_id, repo.id)
        commit = await resolve_commit(git_dir, branch, field=REPO_PATH_KEY)
    engine = await step.app.dbs.workspace(step.workspace_id)
    pool = ParserPool(limits.workers, await confined_parsing(step))
    try:
        report = await index_commit(
            engine, git_dir, repo.id, commit, pool, limits=limits, now=step.clock.now, progress=step.progress,
            dry_run=step.dry_run,
        )  # fmt: skip
    except GrammarFailed as exc:
        raise Unavailable(f"code indexing stopped: {exc}; the graph keeps its earlier state") from exc
    finally:
        await pool.aclose()
    if not step.dry_run:
        await _forget_removed(step, engine)
    found = report.to_state() | {"repoId": repo.id}
    mutated: dict[str, Any] = {OUTPUT_KEY: found}
    if step.dry_run:
        mutated[DRY_RUN_KEY] = {step.step_id: f"index {report.to_parse} files of {repo.name} at {commit[:12]}"}
    await step.progress({"phase": "done", "files": report.parsed, "of": report.to_parse})
    return StepResult.ok(mutated, output=found)


BODIES = [code_index]
