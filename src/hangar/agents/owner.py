"""Which process drives a run: ``<pid>:<start time>``, and whether that process is still alive.

The start time (from ``/proc``, in clock ticks since boot) tells a live owner from an unrelated process that
later got the same pid. Where ``/proc`` is missing, the pid alone is checked.
"""

from __future__ import annotations

import os
from pathlib import Path


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
    fields = _stat_fields(pid)
    if fields is None:
        return True
    # A zombie (killed, not yet reaped by its parent) drives nothing any more.
    return fields[0] != "Z" and ticks in ("?", fields[19])
