"""Paths built from ids: every component is one plain name and the result stays under its root.

Ids that reach a path come from input; they are looked up as records first, and this is the second wall: a
component that is empty, ``.``/``..``, holds a separator or a NUL, or is longer than a file name may be, is
refused naming the field, and the joined path must still lie under ``root`` once symlinks are resolved.
"""

from __future__ import annotations

import os
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
    path = root.joinpath(*parts)
    real_root = os.path.realpath(root)
    if os.path.commonpath([real_root, os.path.realpath(path)]) != real_root:
        raise InvalidArgs(f"{field}: the path it names leaves its directory", field=field)
    return path
