"""Which process is which across processes: ``<pid>:<start time>`` names one process for good, and tells a
live one from an unrelated process that later got the same pid.

Pipelines use it to find the shell scripts a dead driver left running (their process groups are recorded in
``<runDir>/.shell/``), agent runs to record the process driving them. The start time comes from ``/proc``
(clock ticks since boot); where ``/proc`` is missing, the pid alone is checked.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
from collections.abc import Callable
from pathlib import Path

GROUPS_DIR = ".shell"
PR_SET_PDEATHSIG = 1


def _stat_fields(pid: int) -> list[str] | None:
    """``/proc/<pid>/stat`` after the command name (which may hold spaces): field 3 (state) onwards."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()


def start_ticks(pid: int) -> str | None:
    fields = _stat_fields(pid)
    return fields[19] if fields else None  # field 22: start time


def identity(pid: int) -> str:
    return f"{pid}:{start_ticks(pid) or '?'}"


def this_process() -> str:
    return identity(os.getpid())


def is_alive(owner: str | None) -> bool:
    if not owner:
        return False
    pid_text, _, ticks = owner.partition(":")
    try:
        pid = int(pid_text)
    except ValueError:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    fields = _stat_fields(pid)
    if fields is None:
        return True
    # A zombie (killed, not yet reaped by its parent) drives nothing any more.
    return fields[0] != "Z" and ticks in ("?", fields[19])


def record_group(run_dir: Path, step_id: str, pid: int) -> Path:
    """Note a script's process group (its leader's identity) while it runs, for whoever drives the run next."""
    folder = run_dir / GROUPS_DIR
    folder.mkdir(exist_ok=True)
    path = folder / step_id
    path.write_text(identity(pid))
    return path


def kill_orphaned_groups(run_dir: Path) -> int:
    """Kill the script groups an earlier driver of the run recorded and could not stop (it died); call only
    while holding the run's driver lock. Returns how many groups were signalled.

    A group is killed when its leader is the recorded process, or when no process has the leader's pid any more
    (the kernel does not hand out a pid that is still a process group's id, so the group, if any members are
    left, is the recorded one); a pid now used by an unrelated process is left alone.
    """
    folder = run_dir / GROUPS_DIR
    if not folder.is_dir():
        return 0
    killed = 0
    for path in folder.iterdir():
        recorded = path.read_text().strip()
        pid_text, _, ticks = recorded.partition(":")
        with contextlib.suppress(ValueError, ProcessLookupError, PermissionError):
            pid = int(pid_text)
            current = start_ticks(pid)
            if current is None or ticks in ("?", current):
                os.killpg(pid, signal.SIGKILL)
                killed += 1
        path.unlink(missing_ok=True)
    return killed


def die_with_parent() -> Callable[[], None]:
    """A ``preexec_fn`` for a program started on the host: the kernel kills it (SIGKILL) when the process that
    started it dies, however it dies. A server or worker killed -9 stops nothing itself; without this its
    script would run on to its end while the step is run again elsewhere (twice to completion). Only the direct
    child is covered: what the script itself started lives on until it ends (only a namespace, which enclosures
    have, takes a whole tree). The death signal belongs to the starting *thread*, so start such programs from a
    thread that lives as long as the process (the event loop's).

    Everything is resolved before the fork; in the child, a parent that died before the signal was armed is
    caught by comparing the parent's pid."""
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    parent = os.getpid()

    def arm() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)

    return arm
