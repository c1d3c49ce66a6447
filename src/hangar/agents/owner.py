"""Which process drives a run: ``<pid>:<start time>``, and whether that process is still alive.

The start time (from ``/proc``, in clock ticks since boot) tells a live owner from an unrelated process that
later got the same pid. Where ``/proc`` is missing, the pid alone is checked.
"""

from __future__ import annotations

import os
from pathlib import Path


def start_ticks(pid: int) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # Fields after the command name (which may hold spaces) start at the last ')'; start time is field 22.
    return stat.rsplit(")", 1)[1].split()[19]


def this_process() -> str:
    pid = os.getpid()
    return f"{pid}:{start_ticks(pid) or '?'}"


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
    current = start_ticks(pid)
    return current is None or ticks in ("?", current)
