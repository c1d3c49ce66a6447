"""A VM's run directory and the disk its QEMU writes: the work directory (``vm/``, the overlay's) is a small
filesystem of its own (``disks.mount_private_disk``: a sparse ext4 image, ``disk.img`` beside it, loop-mounted on
it), so a guest that fills its overlay meets "No space left on device" at the disk's size, not when the host's
disk is full. A qcow2 overlay grows up to the image's virtual size (imports allow up to 256 GiB) however little
the image holds, and nothing else bounds it.

The size is the rig's (``RigSpec.disk_mb``: the server setting ``confine.rigDiskMb``, as for an enclosure rig's
own files). QEMU reports the failed write to the guest (``werror=report``, see ``machine.qemu_argv``), whose
filesystem then fails or turns read-only as on a full disk: the VM keeps running and can be closed. Where the
host cannot make disks (``disks.host_reason``) the directory stays unbounded and the start says so in the log.

Each run directory holds ``vm-owner``, the server process that made it (``procs.identity``: its pid and start
time, so a later process given the same pid is not taken for it): a process that stopped
without closing its VMs (they died with it) leaves their directories and disks mounted, and the next full-VM
start clears them (``clear_leftovers``). The name is not the enclosure's ``owner``: each backend clears only its
own directories, as only it knows what else they hold.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
from pathlib import Path

from hangar.core import disks, procs
from hangar.errors import HangarError
from hangar.rigs.backends import qemubox

log = logging.getLogger("hangar.rigs.fullvm")

WORK = "vm"  # the one directory the sandbox may write: the overlay's, the disk's mount point
DISK_IMAGE = "disk.img"  # beside it, outside anything the sandbox sees
OWNER = "vm-owner"


def templates_of(run_dir: Path) -> Path:
    """Where empty disks are kept to copy: beside ``run/``, shared with the enclosure rigs."""
    return run_dir.parent.parent / "disk-templates"


def make_run_dir(run_dir: Path, disk_mb: int) -> bool:
    """Make ``run_dir`` (it must not exist) with its work directory on a disk of ``disk_mb`` MB, handed to the
    QEMU user; True when the disk bounds it. On failure nothing is left."""
    os.makedirs(run_dir, mode=0o700)
    try:
        (run_dir / f".{OWNER}").write_text(procs.this_process())
        os.replace(run_dir / f".{OWNER}", run_dir / OWNER)  # whole: a half-written owner would read as gone
        work = run_dir / WORK
        os.mkdir(work, 0o700)
        bounded = disks.mount_private_disk(run_dir / DISK_IMAGE, work, disk_mb, templates_of(run_dir))
        if bounded:
            os.chmod(work, 0o700)  # the new filesystem's root, 0755 as made
        else:
            log.warning("the VM's overlay in %s has no disk quota: %s", run_dir.name, disks.host_reason())
        qemubox.hand_over(work)
        return bounded
    except BaseException:
        remove_run_dir(run_dir)
        raise


def remove_run_dir(run_dir: Path) -> None:
    """Detach the work directory's disk (lazily: a QEMU still inside keeps its view until it ends) and remove
    ``run_dir`` with the image."""
    with contextlib.suppress(HangarError):
        disks.detach(run_dir / WORK)
    shutil.rmtree(run_dir, ignore_errors=True)


def clear_leftovers(run_root: Path) -> int:
    """Remove the VM run directories (and detach their disks) of server processes that are gone; returns how
    many."""
    removed = 0
    if not run_root.is_dir():
        return 0
    for entry in run_root.iterdir():
        try:
            owner = (entry / OWNER).read_text()
        except OSError:
            continue  # an enclosure rig's, or still being made
        if procs.is_alive(owner):
            continue  # its server still runs
        remove_run_dir(entry)
        removed += 1
    if removed:
        log.warning("cleared %d VM run directories left by a server that stopped without closing them", removed)
    return removed
