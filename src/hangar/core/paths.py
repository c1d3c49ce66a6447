"""Paths built from ids: every component is one plain name and the result stays under its root.

Ids that reach a path come from input; they are looked up as records first, and this is the second wall: a
component that is empty, ``.``/``..``, holds a separator or a NUL, or is longer than a file name may be, is
refused naming the field, and no component of the joined path may be a symlink. That is checked without
following anything (``lstat``, component by component): below a folder a guest can write (a space's folder),
resolving a planted link would be the server walking the guest's path. The answer is a name, valid when asked;
where a guest can change what lies below ``root``, the caller opens the path beneath ``root`` with
``hangar.core.beneath``, never by this name.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from hangar.errors import InvalidArgs

NAME_MAX = 255


def contained(root: Path, *parts: str, field: str) -> Path:
    """``root / parts...``, refused (``InvalidArgs`` on ``field``) when any part is not a plain name or the
    result would leave ``root``."""
    for part in parts:
        if (
            not isinstance(part, str)
            or part in ("", ".", "..")
            or "/" in part
            or "\0" in part
            or len(os.fsencode(part)) > NAME_MAX
        ):
            raise InvalidArgs(f"{field}: {part[:80]!r} cannot name a file of this server", field=field)
    path = root
    for part in parts:
        path = path / part
        try:
            found = os.lstat(path)
        except OSError:
            return root.joinpath(*parts)  # nothing there yet (or not reachable): nothing to follow
        if stat.S_ISLNK(found.st_mode):
            raise InvalidArgs(f"{field}: the path it names leaves its directory", field=field)
    return path
