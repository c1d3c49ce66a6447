"""Running git: one helper that translates failures into the error tree, never prompts, and times out."""

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


async def git(*args: str, cwd: Path | None = None, limit_s: float = 120.0) -> str:
    """Run ``git args...`` and return its stdout; raise ``GitFailed`` on a non-zero exit or a timeout."""
    env = {
        **os.environ,
        # A clone URL that wants credentials must fail at once instead of waiting for someone to type them.
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_ASKPASS": "/bin/false",
        "SSH_ASKPASS": "/bin/false",
        "GIT_SSH_COMMAND": "ssh -o BatchMode=yes",
        "LC_ALL": "C",
    }
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
        raise GitFailed(f"git {args[0]} took longer than {limit_s:.0f} s", f"timed out after {limit_s:.0f} s") from None
    if proc.returncode != 0:
        stderr = err.decode(errors="replace")
        raise GitFailed(f"git {args[0]} failed: {stderr.strip()[-300:]}", stderr)
    return out.decode(errors="replace")
