"""Letting a guest user (the rig user, uid 1000) write a host tree without changing who owns it.

The server (root) owns worktrees and runs git on their clones; handing them to the guest user would make git on
the host refuse them as of dubious ownership. Instead each directory and file gets a POSIX ACL entry for that user
(directories also a default entry, so files created later by either side inherit it). The ACL is written as the
kernel's ``system.posix_acl_*`` extended attribute, so no ``setfacl`` is needed.

The tree is the guest's to change at any moment, so it is only ever reached through descriptors
(``hangar.core.beneath``): walked without following symlinks, each ACL written through the entry's own
descriptor once it is checked to be what was listed. A symlink planted in it never makes the server grant
anything outside it. ``granted_user`` tells whom a folder's default entry names, so a tree the server moves into
that folder (a checkout made elsewhere) can be given what it would have inherited had it been made there.
"""

from __future__ import annotations

import os
import stat
import struct

from hangar.core.beneath import walk

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


def grant_tree(top: int, uid: int) -> int:
    """Give ``uid`` read-write access to the directory ``top`` and everything under it, walked from the
    descriptor (``hangar.core.beneath.walk``: no symlink followed, each entry opened beneath its directory and
    checked to be what was listed before its ACL is written through the descriptor). Returns how many entries
    were changed; filesystems without ACL support are left as they are."""
    changed = _grant(top, os.fstat(top), uid)
    for holder, name, seen, _parts in walk(top):
        if not (stat.S_ISDIR(seen.st_mode) or stat.S_ISREG(seen.st_mode)):
            continue  # symlinks, sockets, fifos, devices: nothing to grant
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC, dir_fd=holder)
        except OSError:
            continue
        try:
            st = os.fstat(fd)
            if os.path.samestat(seen, st):
                changed += _grant(fd, st, uid)
        finally:
            os.close(fd)
    return changed


def _grant(fd: int, st: os.stat_result, uid: int) -> int:
    if stat.S_ISDIR(st.st_mode):
        perm = 7
    elif stat.S_ISREG(st.st_mode):
        perm = 7 if st.st_mode & 0o100 else 6
    else:
        return 0
    try:
        os.setxattr(fd, ACCESS, acl_bytes(st.st_mode, uid, perm))
        if stat.S_ISDIR(st.st_mode):
            os.setxattr(fd, DEFAULT, acl_bytes(0o755, uid, 7))
    except OSError:
        return 0
    return 1


def granted_user(folder_fd: int) -> int | None:
    """The user a directory's default ACL grants (the one entry ``grant_tree`` writes), or None."""
    try:
        raw = os.getxattr(folder_fd, DEFAULT)
    except OSError:
        return None
    for offset in range(4, len(raw) - 7, 8):
        tag, _perm, uid = struct.unpack_from("<HHI", raw, offset)
        if tag == USER:
            return int(uid)
    return None
