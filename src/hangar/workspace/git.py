"""Running git: one helper that translates failures into the error tree, never prompts, and times out.

Git on the host runs as the server, so it only ever works on the server's own bare clones, named with
``--git-dir`` (``git_dir``): never in a worktree, whose ``.git`` file (and so the repository, config, hooks and
fsmonitor git would take from it) a space's guests can rewrite. Hooks and fsmonitor are off even there, the
system-wide config is not read (filter drivers a package installed there would run on repository content), and
``GIT_*`` variables the server inherited do not steer it. Only ``cwd`` (registering a repository the server owner
named by path) lets git find a repository by itself.

Nor does git reach anything through the server's user unless the caller says so with a ``Reach``
(``hangar.workspace.sources`` decides): by default it reads no configuration of that user (no global config, so no
credential helper, URL rewrite or filter driver such as git-lfs's runs on repository content; ``HOME`` names no
folder, so curl finds no ``.netrc``), inherits no proxy or SSH agent, and may use no transport at all. A command
that talks to a repo's source is given the transports and options its ``Reach`` allows, and the server user's
configuration and SSH identity only for the sources the server owner stands behind.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from dataclasses import dataclass
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
# Given before every command: no transport unless a ``Reach`` allows one (``protocol.<name>.allow`` wins).
NO_TRANSPORT = ("-c", "protocol.allow=never")
# What the server's user brings that an isolated git must not see: its configuration and credentials (``HOME``,
# ``XDG_CONFIG_HOME``: global config, attributes, ``.netrc``), its SSH agent, and proxies, which would resolve
# and reach names themselves, past the addresses checked here.
_SERVER_USERS = frozenset(
    {"HOME", "XDG_CONFIG_HOME", "SSH_AUTH_SOCK", "http_proxy", "https_proxy", "HTTPS_PROXY", "ALL_PROXY",
     "all_proxy", "no_proxy", "NO_PROXY", "CURL_HOME", "NETRC"}
)  # fmt: skip
NO_HOME = "/nonexistent"  # never created (Debian's home of users without one), so nothing is read from it


@dataclass(frozen=True)
class Reach:
    """How a command that talks to a repo's source may reach it: ``options`` (``-c`` pairs: the transports allowed,
    a pinned address...) given before the command, and whether it runs with the server user's configuration,
    credentials and SSH identity (``server_identity``: only for sources the server owner stands behind)."""

    options: tuple[str, ...]
    server_identity: bool = False


def git_env(reach: Reach | None = None) -> dict[str, str]:
    """The environment git runs in (see the module's docstring)."""
    own = reach is not None and reach.server_identity
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("GIT_") and (own or k not in _SERVER_USERS)},
        # A clone URL that wants credentials must fail at once instead of waiting for someone to type them.
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_ASKPASS": "/bin/false",
        "SSH_ASKPASS": "/bin/false",
        "GIT_SSH_COMMAND": "ssh -o BatchMode=yes",
        "GIT_CONFIG_NOSYSTEM": "1",
        "LC_ALL": "C",
    }
    if not own:
        env |= {"GIT_CONFIG_GLOBAL": "/dev/null", "HOME": NO_HOME}
    return env


async def git(
    *args: str, git_dir: Path | None = None, cwd: Path | None = None, limit_s: float = 120.0, reach: Reach | None = None
) -> str:
    """Run ``git args...`` on the bare clone ``git_dir`` (or, without it, in ``cwd`` or nowhere: a clone) and
    return its stdout; raise ``GitFailed`` on a non-zero exit or a timeout. Without ``reach`` git uses no
    transport and none of the server user's configuration."""
    env = git_env(reach)
    args = (*NO_TRANSPORT, *(reach.options if reach is not None else ()), *args)
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
