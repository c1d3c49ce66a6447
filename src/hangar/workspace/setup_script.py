"""A repository's setup script: ``.hangar/setup`` in a freshly checked-out worktree, run while a space is set up.

The path is fixed and lives in the repository itself: the script is a file the repository's authors own and review
like the rest of their code, so no workspace setting can point provisioning at some other program, and a repo
without the file is checked out exactly as before. Only an executable regular file counts; the path is examined
beneath the space's folder without following any symlink, so a link planted in a repository (or by the space's
guests) never makes the server look elsewhere on the host.

It is code the repository's authors wrote, so it runs confined like shell steps and command agents
(``hangar.core.confine``): in an enclosure of its own, closed when the script ends (it shares no process tree
with the space's agents, which run later with secrets), with the space's folder mounted as the working
directory and the script started in its repo's worktree, with an environment holding only the variables below,
never the server's, and a timeout. What the script leaves running (a server started with ``nohup``, a
double fork) is killed when it exits: only files it leaves in the folder outlast it. Where the host cannot
confine, it is refused with the sentence every caller of ``confinement_for`` gives, never run unconfined.

Environment: ``HANGAR_WORKSPACE_ID``, ``HANGAR_SPACE_ID``, ``HANGAR_REPO`` (the repo's name) and
``HANGAR_WORKTREE`` (the worktree as the script sees it). The script is handed no secret, so what it prints holds
none of ours: its output's tail can go into the failure reason as it is.
"""

from __future__ import annotations

import secrets
import stat
from pathlib import Path

from hangar.core.beneath import anchored, lstat_beneath
from hangar.core.confine import Job, OnWait, Scope, confinement_for, run_alone
from hangar.core.context import AppContext
from hangar.errors import Conflict

SETUP_SCRIPT = (".hangar", "setup")
SETUP_TIMEOUT_S = 600.0
OUTPUT_TAIL = 2000
# Started by a shell in the space's folder: the worktree is the folder's ``<repoName>`` subdirectory wherever the
# folder is mounted, and the name arrives as an argument, never spliced into the command text.
_START = 'cd -- "$1" && exec ./.hangar/setup'


class SetupScriptFailed(Conflict):
    """The repository's setup script failed: the worktree is there, but not in the state its authors want."""


def setup_key(workspace_id: str, space_id: str) -> str:
    """The enclosure of one run of a repository's setup script, never shared: not even with the space's agents."""
    return f"spaceSetup:{workspace_id}:{space_id}:{secrets.token_hex(4)}"


def has_setup_script(folder: Path, repo_name: str) -> bool:
    """True when the worktree ``repo_name`` of the space's ``folder`` holds an executable regular file at
    ``.hangar/setup``, looked up beneath the folder's descriptor with no symlink followed on the way or at the end."""
    try:
        with anchored(folder) as fd:
            script = lstat_beneath(fd, (repo_name, *SETUP_SCRIPT))
    except OSError:
        return False
    return script is not None and stat.S_ISREG(script.st_mode) and bool(script.st_mode & 0o111)


async def run_setup_script(
    app: AppContext,
    workspace_id: str,
    space_id: str,
    folder: Path,
    repo_name: str,
    *,
    timeout_s: float = SETUP_TIMEOUT_S,
    on_wait: OnWait | None = None,
) -> None:
    """Run ``<folder>/<repo_name>/.hangar/setup`` confined in the space's enclosure; raise ``SetupScriptFailed``
    naming the exit status and the output's tail when it fails, ``Unavailable`` when it cannot run confined.
    ``on_wait`` hears what the script waits for before it starts (the terminal image's build, the boot)."""
    confinement = await confinement_for(app)
    scope = Scope(setup_key(workspace_id, space_id), workspace_id, folder, space_id=space_id)
    env = {
        "HANGAR_WORKSPACE_ID": workspace_id,
        "HANGAR_SPACE_ID": space_id,
        "HANGAR_REPO": repo_name,
        "HANGAR_WORKTREE": f"{confinement.workdir_seen(scope)}/{repo_name}",
    }
    job = Job(("bash", "-c", _START, "hangar-setup", repo_name), env, timeout_s=timeout_s, group_name="setup")
    done = await run_alone(confinement, scope, job, None, on_wait)
    if done.timed_out:
        raise SetupScriptFailed(
            f"the setup script of {repo_name} did not finish within {timeout_s:g} s and was stopped"
            + _tail(done.stderr, done.stdout, prefix=": ")
        )
    if done.exit_code != 0:
        raise SetupScriptFailed(
            f"the setup script of {repo_name} exited with status {done.exit_code}"
            + (_tail(done.stderr, done.stdout, prefix=": ") or " (no output)")
        )


def _tail(stderr: str, stdout: str, *, prefix: str) -> str:
    """The end of what the script said, stderr first (where failures are explained), else stdout."""
    said = stderr.strip() or stdout.strip()
    return f"{prefix}{said[-OUTPUT_TAIL:]}" if said else ""
