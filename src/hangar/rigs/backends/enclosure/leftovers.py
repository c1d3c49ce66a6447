"""Rig directories (and their cgroups and disks) a server process left when it stopped without closing its rigs:
found by the ``owner`` file each rig directory holds (the pid of the server that made it) and removed at start."""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
from pathlib import Path

from hangar.core import disks
from hangar.errors import HangarError
from hangar.rigs.backends.enclosure.cgroups import rig_cgroup

log = logging.getLogger("hangar.rigs.enclosure")


def clear_leftovers(run_root: Path, cgroup_version: str) -> int:
    """Remove rig directories (and their cgroups) left by a server process that is gone: its rigs died with
    it (bubblewrap's ``--die-with-parent``), but their disks and groups stay. Returns how many were removed."""
    removed = 0
    if not run_root.is_dir():
        return 0
    for entry in run_root.iterdir():
        try:
            owner = int((entry / "owner").read_text())
        except (OSError, ValueError):
            continue  # not ours, or still being created
        try:
            os.kill(owner, 0)
            continue  # its server still runs
        except ProcessLookupError:
            pass
        except PermissionError:
            continue
        group = rig_cgroup(cgroup_version, entry.name)
        with contextlib.suppress(OSError):
            group.kill_all(timeout_s=1.0)
            group.remove()
        with contextlib.suppress(HangarError):
            disks.detach(entry / "disk")
        shutil.rmtree(entry, ignore_errors=True)
        removed += 1
    if removed:
        log.warning("cleared %d rig directories left by a server that stopped without closing them", removed)
    return removed
