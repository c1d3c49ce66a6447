"""What the forked child does before it becomes bubblewrap: join the rig's cgroups, enter a private mount
namespace and mount the overlay root there (so the mount vanishes with the rig and never shows on the host).

Done with direct system calls in the child (``preexec_fn``) instead of a chain of ``sh``, ``unshare`` and
``mount`` processes, which cost more than the rest of the launch. Everything the child needs is prepared
before the fork (bytes, resolved C functions), and a failure is written to the rig's log descriptor, since
exceptions from the child only surface as a generic error.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable
from pathlib import Path

from hangar.errors import Unavailable

CLONE_NEWNS = 0x00020000
MS_REC, MS_PRIVATE = 0x4000, 0x40000

_libc = ctypes.CDLL(None, use_errno=True)
_unshare = _libc.unshare
_mount = _libc.mount
_mount.argtypes = (ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p)


def overlay_safe(path: Path) -> bytes:
    text = str(path)
    if any(c in text for c in ",:\\\n"):
        raise Unavailable(f"path {text!r} cannot be used in an overlay mount (it contains ',', ':' or '\\')")
    return os.fsencode(text)


def prepare(
    procs_files: list[Path], lower: Path, upper: Path, work: Path, merged: Path, log_fd: int
) -> Callable[[], None]:
    files = [os.fsencode(str(p)) for p in procs_files]
    options = (
        b"lowerdir=" + overlay_safe(lower) + b",upperdir=" + overlay_safe(upper) + b",workdir=" + overlay_safe(work)
    )
    target = os.fsencode(str(merged))

    def fail(step: bytes) -> None:
        err = ctypes.get_errno()
        os.write(log_fd, b"rig launch: " + step + b": " + os.strerror(err).encode() + b"\n")
        raise OSError(err, step.decode())

    def child() -> None:
        pid = str(os.getpid()).encode()
        for name in files:
            fd = os.open(name, os.O_WRONLY)
            try:
                os.write(fd, pid)
            finally:
                os.close(fd)
        if _unshare(CLONE_NEWNS) != 0:
            fail(b"unshare(CLONE_NEWNS)")
        if _mount(None, b"/", None, MS_REC | MS_PRIVATE, None) != 0:
            fail(b"making mounts private")
        if _mount(b"overlay", target, b"overlay", 0, options) != 0:
            fail(b"mounting the overlay root")

    return child
