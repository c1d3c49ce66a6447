"""Guest paths the file lane takes: absolute, without ``..``, without NUL.

Files themselves are read and written by the rig's agent, as the rig user, inside the rig (``channel``): the
kernel's permission checks and the rig's own root decide what a path reaches, never the server's authority.
This check only refuses, before the rig is asked, what no guest path may be.
"""

from __future__ import annotations

from hangar.errors import InvalidArgs, Refused


def split_guest_path(guest_path: str) -> list[str]:
    if not isinstance(guest_path, str) or not guest_path.startswith("/") or "\x00" in guest_path:
        raise InvalidArgs(f"guest path {guest_path!r} must be an absolute path", field="path")
    parts = [p for p in guest_path.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise Refused(f"guest path {guest_path!r} contains '..' and could leave the rig")
    if not parts:
        raise InvalidArgs("guest path names the root directory, not a file", field="path")
    return parts
