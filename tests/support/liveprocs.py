"""Processes on this host found by what their command lines name: a test's program running inside a sandbox,
where it can write nothing the test reads, is known by a marker in its arguments."""

from __future__ import annotations

import contextlib
from pathlib import Path


def running_with(marker: str) -> list[bytes]:
    """The command lines of the live (not zombie) processes naming ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            line = (entry / "cmdline").read_bytes() if entry.name.isdigit() else b""
            if marker.encode() in line and (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                found.append(line)
    return found
