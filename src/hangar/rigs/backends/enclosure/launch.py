"""What the forked child does before it becomes bubblewrap: join the rig's cgroups, enter a private mount
namespace and mount the overlay root there (so the mount vanishes with the rig and never shows on the host).
The overlay's layers are named relative to the rig's disk directory, so its options, which the rig can read in
``/proc/self/mountinfo``, hold no host path (``lowerdir=image,upperdir=upper,workdir=work``, ``image`` being
a link to the pack). Also here: the memory files bubblewrap reads its options and filter from, and the files
the host places in a rig's own layer before it boots.

Done with direct system calls in the child (``preexec_fn``) instead of a chain of ``sh``, ``unshare`` and
``mount`` processes, which cost more than the rest of the launch. Everything the child needs is prepared
before the fork (bytes, resolved C functions), and a failure is written to the child's stderr (the pipe to the
rig's log), since exceptions from the child only surface as a generic error.
"""

from __future__ import annotations

import ctypes
import os
import stat
from collections.abc import Callable
from pathlib import Path

CLONE_NEWNS = 0x00020000
MS_REC, MS_PRIVATE = 0x4000, 0x40000
LOWER, UPPER, WORK = "image", "upper", "work"  # beneath the rig's disk directory; LOWER links to the pack

_libc = ctypes.CDLL(None, use_errno=True)
_unshare = _libc.unshare
_mount = _libc.mount
_mount.argtypes = (ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p)
_OPTIONS = f"lowerdir={LOWER},upperdir={UPPER},workdir={WORK}".encode()


def data_fd(name: str, data: bytes | list[str]) -> int:
    """A memory file holding ``data`` (a list: arguments, each NUL-terminated), read from its start: what
    bubblewrap reads from a descriptor (its options, the seccomp filter). Close-on-exec in the server; the
    launch passes it on (``pass_fds``)."""
    raw = data if isinstance(data, bytes) else b"".join(os.fsencode(arg) + b"\0" for arg in data)
    fd = os.memfd_create(name, os.MFD_CLOEXEC)
    try:
        view = memoryview(raw)
        while view:
            view = view[os.write(fd, view) :]
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return fd


def place_file(upper: Path, lower: Path, relative: str, data: bytes) -> None:
    """Write a root-owned, world-readable file into a rig's upper layer before its overlay is mounted. Missing
    parent directories are made as the pack has them (mode and owner): an upper directory's attributes are
    what the merged directory shows."""
    target = upper
    source = lower
    *parents, name = relative.split("/")
    for part in parents:
        target, source = target / part, source / part
        if not target.is_dir():
            try:
                st = os.lstat(source)
            except OSError:
                st = None
            if st is not None and stat.S_ISDIR(st.st_mode):
                mode, uid, gid = st.st_mode & 0o7777, st.st_uid, st.st_gid
            else:
                mode, uid, gid = 0o755, 0, 0
            target.mkdir(mode)
            os.chown(target, uid, gid)
            os.chmod(target, mode)
    path = target / name
    path.write_bytes(data)
    os.chmod(path, 0o644)


def _fail(step: bytes) -> None:
    err = ctypes.get_errno()
    os.write(2, b"rig launch: " + step + b": " + os.strerror(err).encode() + b"\n")
    raise OSError(err, step.decode())


def prepare(procs_files: list[Path], disk: Path, merged: Path) -> Callable[[], None]:
    """The rig's first process: ``disk`` holds ``image`` (a link to the pack), ``upper`` and ``work``."""
    files = [os.fsencode(str(p)) for p in procs_files]
    where = os.fsencode(str(disk))
    target = os.fsencode(str(merged))

    def child() -> None:
        pid = str(os.getpid()).encode()
        for name in files:
            fd = os.open(name, os.O_WRONLY)
            try:
                os.write(fd, pid)
            finally:
                os.close(fd)
        if _unshare(CLONE_NEWNS) != 0:
            _fail(b"unshare(CLONE_NEWNS)")
        if _mount(None, b"/", None, MS_REC | MS_PRIVATE, None) != 0:
            _fail(b"making mounts private")
        os.chdir(where)  # the layers are named relative to it
        if _mount(b"overlay", target, b"overlay", 0, _OPTIONS) != 0:
            _fail(b"mounting the overlay root")
        os.chdir(b"/")

    return child
