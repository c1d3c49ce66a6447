"""The rig user, whom every enclosed program runs as, and letting it write a host tree without changing who owns it.

There is no user namespace around an enclosure, so the rig user's uid is the same number on the host. It is one
no host account uses: a host process of the same uid could read enclosed processes' environments (their secrets),
trace them, and reach every tree granted here. ``RIG_UID`` sits in the range no convention hands out (systemd's
table of ranges calls 1879048192-2147352575 unused): above regular users (1000-60000), systemd's dynamic and
container users (61184-65519, 524288-1879048191), the subordinate ranges ``useradd`` gives out (100000 to
600100000) and the ranges directory services map by default (SSSD's and FreeIPA's end at 2000200000); below
2^31, so tools keeping uids in a signed 32-bit integer take it. The enclosure refuses to start while a host
account or a host process outside enclosures has it (``hangar.rigs.backends.enclosure.probe``). Before, rigs ran
as uid 1000, the first person's account on a typical host: granting a tree takes back what that uid left there
(``FORMER_RIG_UID``).

The server (root) owns worktrees and runs git on their clones; handing them to the guest user would make git on
the host refuse them as of dubious ownership. Instead each directory and file gets a POSIX ACL entry for that user
(directories also a default entry, so files created later by either side inherit it). The ACL is written as the
kernel's ``system.posix_acl_*`` extended attribute, so no ``setfacl`` is needed.

The tree is the guest's to change at any moment, so it is only ever reached through descriptors
(``hangar.core.beneath``): walked without following symlinks, each ACL written through the entry's own
descriptor once it is checked to be what was listed. A symlink planted in it never makes the server grant
anything outside it. ``grants_guest`` tells whether a folder's default entry names the guest, so a tree the server
moves into that folder (a checkout made elsewhere) can be given what it would have inherited had it been made there.
"""

from __future__ import annotations

import contextlib
import os
import stat
import struct

from hangar.core.beneath import walk

RIG_UID = 2_100_000_000
RIG_GID = RIG_UID
FORMER_RIG_UID = 1000  # what the rig user was (its group too): what it owns in a tree granted again is the rig's
FORMER_RIG_GID = 1000

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


def grant_tree(top: int) -> int:
    """Give the rig user read-write access to the directory ``top`` and everything under it, walked from the
    descriptor (``hangar.core.beneath.walk``: no symlink followed, each entry opened beneath its directory and
    checked to be what was listed before its ACL is written through the descriptor). The ACL written replaces
    the whole ACL, so an entry for the former rig uid goes; a directory or file the former rig user owns is handed
    to the rig user. Returns how many entries were changed; filesystems without ACL support are left as they are."""
    changed = _grant(top, os.fstat(top))
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
                changed += _grant(fd, st)
        finally:
            os.close(fd)
    return changed


def _grant(fd: int, st: os.stat_result) -> int:
    if stat.S_ISDIR(st.st_mode):
        perm = 7
    elif stat.S_ISREG(st.st_mode):
        perm = 7 if st.st_mode & 0o100 else 6
    else:
        return 0
    if st.st_uid == FORMER_RIG_UID or st.st_gid == FORMER_RIG_GID:
        # Made by the rig user when it was uid 1000, a host account's uid on most hosts: through the descriptor
        # checked above, so only this entry changes hands.
        uid = RIG_UID if st.st_uid == FORMER_RIG_UID else -1
        gid = RIG_GID if st.st_gid == FORMER_RIG_GID else -1
        with contextlib.suppress(OSError):
            os.fchown(fd, uid, gid)
    try:
        os.setxattr(fd, ACCESS, acl_bytes(st.st_mode, RIG_UID, perm))
        if stat.S_ISDIR(st.st_mode):
            os.setxattr(fd, DEFAULT, acl_bytes(0o755, RIG_UID, 7))
    except OSError:
        return 0
    return 1


def grants_guest(folder_fd: int) -> bool:
    """Whether a directory's default ACL grants a user (the one entry ``grant_tree`` writes, for the rig user now
    or its former uid): what the server moves into it is then granted to the rig user."""
    return bool(granted_users(folder_fd, DEFAULT))


def granted_users(fd: int, name: str = ACCESS) -> list[int]:
    """The users an entry's ACL (``name``: the access or the default one) names, in order; none without one."""
    try:
        raw = os.getxattr(fd, name)
    except OSError:
        return []
    found = []
    for offset in range(4, len(raw) - 7, 8):
        tag, _perm, uid = struct.unpack_from("<HHI", raw, offset)
        if tag == USER:
            found.append(int(uid))
    return found
