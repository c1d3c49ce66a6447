"""Disks of a test's data directory: servers mount them (``hangar.core.disks``) and they outlive a server, as
they should on a real host; a test's data directory is thrown away, and its loop devices must go with it."""

from __future__ import annotations

import subprocess
from pathlib import Path


def detach_disks(data_dir: Path) -> int:
    """Detach the disks the server mounted on directories of ``data_dir`` (they outlive a server, as they should
    on a real host; a test's data directory is thrown away, and its loop devices with it)."""
    root = str(data_dir.resolve())
    mounted = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].encode().decode("unicode_escape")
        if point.startswith(root + "/"):
            mounted.append(point)
    for point in sorted(mounted, reverse=True):
        subprocess.run(["umount", "--lazy", point], check=False, capture_output=True)
    return len(mounted)
