"""A repo's files at one commit, read from the server's own bare clone: what code indexing walks.

Nothing here touches a checkout. A worktree is hostile (its guests can plant symlinks, fifos, a ``.git`` file
naming another repository); the bare clone is the server's, and git reads a commit's tree from its objects. A
symlink in the tree is listed as such and never followed (its blob is the link's text), a submodule is a commit
id, not files. ``git cat-file --batch`` hands blobs over one by one without a filter, textconv or hook running
(``hangar.workspace.git``: no system or user configuration, hooks off).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from hangar.errors import InvalidArgs
from hangar.workspace.git import HARDENED, NO_TRANSPORT, GitFailed, git, git_binary, git_env

_FILE_MODES = {"100644", "100755"}
_SYMLINK_MODE = "120000"


@dataclass(frozen=True)
class TreeEntry:
    path: str
    oid: str
    size: int
    kind: str  # "file", "symlink" (listed, never followed) or "submodule"


async def resolve_commit(git_dir: Path, rev: str, field: str = "rev") -> str:
    """The commit ``rev`` (a branch, a tag, a commit id) names in the clone; ``InvalidArgs`` when none."""
    if not rev or rev.startswith("-") or any(c.isspace() or c in "\0:^~" for c in rev) or ".." in rev:
        raise InvalidArgs(f"{rev!r} is not a branch, tag or commit id", field=field)
    try:
        out = await git("rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}", git_dir=git_dir)
    except GitFailed as exc:
        raise InvalidArgs(f"the repo has no commit {rev!r}", field=field) from exc
    return out.strip()


async def commit_exists(git_dir: Path, commit: str) -> bool:
    try:
        await git("cat-file", "-e", f"{commit}^{{commit}}", git_dir=git_dir)
    except GitFailed:
        return False
    return True


async def list_tree(git_dir: Path, commit: str) -> list[TreeEntry]:
    """Every entry of the commit's tree, recursively, with blob sizes."""
    out = await git("ls-tree", "-r", "-l", "-z", "--full-tree", commit, git_dir=git_dir, limit_s=300.0)
    entries = []
    for record in out.split("\0"):
        if not record:
            continue
        meta, _, path = record.partition("\t")
        mode, _kind, oid, size = meta.split()
        kind = "file" if mode in _FILE_MODES else "symlink" if mode == _SYMLINK_MODE else "submodule"
        entries.append(TreeEntry(path, oid, int(size) if size.isdigit() else 0, kind))
    return entries


class BlobReader:
    """One ``git cat-file --batch`` on the clone: ``read(oid, limit)`` answers a blob's first ``limit`` bytes."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self._proc = proc

    async def read(self, oid: str, limit: int) -> bytes:
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._proc.stdin.write(oid.encode() + b"\n")
        await self._proc.stdin.drain()
        head = (await self._proc.stdout.readline()).split()
        if len(head) != 3:
            raise GitFailed(f"git cat-file has no object {oid}", b" ".join(head).decode(errors="replace"))
        size = int(head[2])
        data = await self._proc.stdout.readexactly(size + 1)  # and its newline
        return data[: min(size, limit)]


@contextlib.asynccontextmanager
async def blob_reader(git_dir: Path) -> AsyncIterator[BlobReader]:
    proc = await asyncio.create_subprocess_exec(
        git_binary(), "--git-dir", str(git_dir), *HARDENED, *NO_TRANSPORT, "cat-file", "--batch",
        cwd=str(git_dir), env=git_env(), stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL, start_new_session=True, limit=1 << 20,
    )  # fmt: skip
    try:
        yield BlobReader(proc)
    finally:
        if proc.returncode is None:
            proc.kill()
        await proc.wait()


# -- carrying a branch's commits to another host (a ``hangar worker`` indexing code) -----------------------------

BUNDLE_TIME_S = 600.0  # git bundle create / unbundle of a large repository


async def bundle_branch(git_dir: Path, branch: str, have: str | None, to: Path) -> None:
    """A git bundle at ``to`` of the clone's ``branch``, without what the commit ``have`` (when the clone has it)
    already holds. ``GitFailed`` when git cannot make it (an empty bundle: ``have`` is the branch's tip)."""
    wanted = [f"refs/heads/{branch}"]
    if have is not None and await commit_exists(git_dir, have):
        wanted.append(f"^{have}")
    await git("bundle", "create", "--quiet", str(to), *wanted, git_dir=git_dir, limit_s=BUNDLE_TIME_S)


async def open_mirror(path: Path, ref: str) -> str | None:
    """A bare repository at ``path`` (made if absent) that keeps commits brought by bundles, and the commit its
    ``ref`` names, if any."""
    if not (path / "HEAD").exists():
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        await git("init", "--quiet", "--bare", str(path))
    with contextlib.suppress(GitFailed, InvalidArgs):
        return await resolve_commit(path, ref)
    return None


async def unbundle(mirror: Path, bundle: Path | None, commit: str, ref: str) -> bool:
    """The bundle's objects (if any) added to ``mirror`` (no transport: ``git bundle unbundle``) and ``ref`` set to
    ``commit``; False when ``commit`` is not there after."""
    if bundle is not None:
        await git("bundle", "unbundle", str(bundle), git_dir=mirror, limit_s=BUNDLE_TIME_S)
    if not await commit_exists(mirror, commit):
        return False
    await git("update-ref", ref, commit, git_dir=mirror)
    return True
