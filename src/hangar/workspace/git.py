"""Running git: one helper that translates failures into the error tree, never prompts, and times out.

Git on the host runs as the server, so it only ever works on the server's own bare clones, named with
``--git-dir`` (``git_dir``): never in a worktree, whose ``.git`` file (and so the repository, config, hooks and
fsmonitor git would take from it) a space's guests can rewrite. Hooks and fsmonitor are off even there, the
system-wide config is not read (filter drivers a package installed there would run on repository content), and
``GIT_*`` variables the server inherited do not steer it. Only ``cwd`` (registering a repository the server owner
named by path) lets git find a repository by itself.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

from hangar.errors import Internal, Unavailable


class GitFailed(Internal):
    """A git command exited non-zero; ``stderr`` holds git's own explanation."""

    def __init__(self, message: str, stderr: str) -> None:
        super().__init__(message)
        self.stderr = stderr

    @property
    def reason(self) -> str:
        """The last meaningful line git printed, for messages shown to people."""
        lines = [ln.strip() for ln in self.stderr.splitlines() if ln.strip()]
        return lines[-1] if lines else "git gave no reason"


def git_binary() -> str:
    found = shutil.which("git")
    if found is None:
        raise Unavailable("git is not installed on this server; install it to register repos")
    return found


# Given before every command on a bare clone: no hook runs, no fsmonitor daemon is started.
HARDENED = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false")


async def git(*args: str, git_dir: Path | None = None, cwd: Path | None = None, limit_s: float = 120.0) -> str:
    """Run ``git args...`` on the bare clone ``git_dir`` (or, without it, in ``cwd`` or nowhere: a clone) and
    return its stdout; raise ``GitFailed`` on a non-zero exit or a timeout."""
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
        # A clone URL that wants credentials must fail at once instead of waiting for someone to type them.
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_ASKPASS": "/bin/false",
        "SSH_ASKPASS": "/bin/false",
        "GIT_SSH_COMMAND": "ssh -o BatchMode=yes",
        "GIT_CONFIG_NOSYSTEM": "1",
        "LC_ALL": "C",
    }
    if git_dir is not None:
        args = ("--git-dir", str(git_dir), *HARDENED, *args)
        cwd = git_dir
    proc = await asyncio.create_subprocess_exec(
        git_binary(),
        *args,
        cwd=str(cwd) if cwd else None,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), limit_s)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        took = f"{limit_s:.0f} s"
        raise GitFailed(f"git {_verb(args)} took longer than {took}", f"timed out after {took}") from None
    if proc.returncode != 0:
        stderr = err.decode(errors="replace")
        raise GitFailed(f"git {_verb(args)} failed: {stderr.strip()[-300:]}", stderr)
    return out.decode(errors="replace")


def _verb(args: tuple[str, ...]) -> str:
    """The git command run (``worktree``, ``fetch``...), past the options that name the repository."""
    rest = list(args)
    while rest and rest[0] in ("--git-dir", "-c"):
        rest = rest[2:]
    return rest[0] if rest else "git"
