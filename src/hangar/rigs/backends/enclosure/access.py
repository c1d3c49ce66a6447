"""Letting the rig user (uid 1000) write a host worktree without changing who owns it.

The server (root) owns worktrees and runs git on them; handing them to uid 1000 would make git on the host
refuse them as of dubious ownership. Instead each directory and file gets a POSIX ACL entry for the rig
user (directories also a default entry, so files created later by either side inherit it). The ACL is
written as the kernel's ``system.posix_acl_*`` extended attribute, so no ``setfacl`` is needed.
"""

from __future__ import annotations

import contextlib
import os
import stat
import struct
from pathlib import Path

ACL_VERSION = 2
USER_OBJ, USER, GROUP_OBJ, MASK, OTHER = 0x01, 0x02, 0x04, 0x10, 0x20
UNDEFINED_ID = 0xFFFFFFFF
ACCESS, DEFAULT = "system.posix_acl_access", "system.posix_acl_default"


def acl_bytes(mode: int, uid: int, user_perm: int) -> bytes:
    """An ACL keeping ``mode``'s owner, group and other bits and adding ``uid`` with ``user_perm``."""
    entries = [
        (USER_OBJ, (mode >> 6) & 7, UNDEFINED_ID),
        (USER, user_perm, uid),
        (GROUP_OBJ, (mode >> 3) & 7, UNDEFINED_ID),
        (MASK, 7, UNDEFINED_ID),
        (OTHER, mode & 7, UNDEFINED_ID),
    ]
    return struct.pack("<I", ACL_VERSION) + b"".join(struct.pack("<HHI", *e) for e in entries)


def grant_tree(root: Path, uid: int) -> int:
    """Give ``uid`` read-write access to everything under ``root`` (not following symlinks); returns how
    many entries were changed. Filesystems without ACL support are left as they are."""
    changed = 0
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [".", *dirnames, *filenames]:
            path = os.path.join(dirpath, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                perm = 7
            elif stat.S_ISREG(st.st_mode):
                perm = 7 if st.st_mode & 0o100 else 6
            else:
                continue  # symlinks, sockets, devices: nothing to grant
            with contextlib.suppress(OSError):
                os.setxattr(path, ACCESS, acl_bytes(st.st_mode, uid, perm), follow_symlinks=False)
                if stat.S_ISDIR(st.st_mode):
                    os.setxattr(path, DEFAULT, acl_bytes(0o755, uid, 7), follow_symlinks=False)
                changed += 1
    return changed
