"""A full VM's overlay lives on a disk of the rig's size (``fullvm.rundir``), so a guest filling it meets "No space
left on device" at that size instead of filling the host: the machine's own preparation (``make_run_dir``, then
``qemu-img create`` of the overlay in the QEMU sandbox, its work directory bound by descriptor) is run without
booting a VM, and QEMU's block layer (``qemu-io`` in the same sandbox, writing through the overlay as the VM's disk
does) is refused past the size while a write under it succeeds; the host's file stays within the size. Closing
and the leftovers clearing of a stopped server detach the disk; a failed preparation leaves nothing; the VM is
told to report a failed write to the guest (``werror=report``) rather than stop."""

from __future__ import annotations

import asyncio
import errno
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from hangar.core import disks, procs
from hangar.errors import Unavailable
from hangar.rigs.backends import qemubox
from hangar.rigs.backends.fullvm import rundir
from hangar.rigs.backends.fullvm.machine import (
    OVERLAY,
    OVERLAY_INSIDE,
    QEMU_IMG_ADDRESS_SPACE,
    machine_binds,
    make_overlay,
    qemu_argv,
)
from tests.support.desktopimage import needs_qemu

pytestmark = [
    needs_qemu,
    pytest.mark.skipif(disks.host_reason() is not None, reason=f"no disks here: {disks.host_reason()}"),
]

DISK_MB = 256
MB = 1024 * 1024


def mounted(path: Path) -> bool:
    """Whether ``path`` is a mount point in this process's view (read from mountinfo, not from ``path``)."""
    with open("/proc/self/mountinfo") as f:
        return any(line.split()[4] == str(path) for line in f)


def base_image(tmp_path: Path) -> Path:
    image = tmp_path / "base.qcow2"
    subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", str(image), "2G"], check=True)
    image.chmod(0o644)  # read by the QEMU user, as imported images are
    return image


async def qemu_io(image: Path, run_dir: Path, *commands: str) -> str:
    """``qemu-io`` writing through the overlay, in the sandbox a machine gets (the same binds)."""
    binds = machine_binds(image, run_dir)
    try:
        argv = [shutil.which("qemu-io") or "/usr/bin/qemu-io", "-f", "qcow2"]
        for command in commands:
            argv += ["-c", command]
        box = qemubox.sandboxed([*argv, OVERLAY_INSIDE], binds, address_space=QEMU_IMG_ADDRESS_SPACE)
        proc = await qemubox.start(box, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
        out, _ = await proc.communicate()
        return out.decode("utf-8", "replace")
    finally:
        for bind in binds:
            os.close(bind.fd)


async def prepared(tmp_path: Path, image: Path) -> Path:
    """A VM's run directory as ``start_machine`` prepares it, up to its overlay."""
    run_dir = tmp_path / "rigs" / "run" / "rig1"
    assert await asyncio.to_thread(rundir.make_run_dir, run_dir, DISK_MB)
    binds = machine_binds(image, run_dir)
    try:
        await make_overlay(shutil.which("qemu-img") or "/usr/bin/qemu-img", binds)
    finally:
        for bind in binds:
            os.close(bind.fd)
    return run_dir


@pytest.mark.skipif(shutil.which("qemu-io") is None, reason="qemu-io is missing (Debian package qemu-utils)")
async def test_the_overlays_disk_refuses_qemus_writes_past_the_rigs_size_and_takes_those_under_it(
    tmp_path: Path,
) -> None:
    image = base_image(tmp_path)
    run_dir = await prepared(tmp_path, image)
    work = run_dir / rundir.WORK
    try:
        assert mounted(work)
        st = os.statvfs(work)
        assert DISK_MB * 3 // 4 * MB < st.f_blocks * st.f_frsize <= DISK_MB * MB  # less the filesystem's own
        assert os.stat(work).st_mode & 0o777 == 0o700
        if os.geteuid() == 0:
            assert os.stat(work).st_uid == qemubox.QEMU_UID and os.stat(work / OVERLAY).st_uid == qemubox.QEMU_UID
        # Under the size: QEMU writes 128 MB through the overlay.
        said = await qemu_io(image, run_dir, "write -P 171 0 64M", "write -P 171 64M 64M")
        assert "failed" not in said and said.count("wrote 67108864/67108864 bytes") == 2, said
        # Past it: the guest's disk is 2 GiB, the overlay's 256 MB.
        writes = [f"write -P 171 {offset}M 64M" for offset in range(128, 512, 64)]
        said = await qemu_io(image, run_dir, *writes)
        assert "No space left on device" in said, said
        on_host = (run_dir / rundir.DISK_IMAGE).stat().st_blocks * 512
        assert on_host <= DISK_MB * MB and (work / OVERLAY).stat().st_blocks * 512 < DISK_MB * MB
        # The host's side of it: the server writing there meets the same bound.
        with open(work / "filler", "wb") as f, pytest.raises(OSError) as raised:
            for _ in range(DISK_MB):
                f.write(b"\0" * MB)
                f.flush()
                os.fsync(f.fileno())
        assert raised.value.errno == errno.ENOSPC
    finally:
        await asyncio.to_thread(rundir.remove_run_dir, run_dir)
    assert not mounted(work) and not run_dir.exists()


async def test_closing_detaches_the_disk_and_removes_the_run_directory(tmp_path: Path) -> None:
    run_dir = tmp_path / "rigs" / "run" / "rig1"
    assert rundir.make_run_dir(run_dir, DISK_MB)
    assert mounted(run_dir / rundir.WORK) and (run_dir / rundir.OWNER).read_text() == procs.this_process()
    rundir.remove_run_dir(run_dir)
    assert not mounted(run_dir / rundir.WORK) and not run_dir.exists()
    rundir.remove_run_dir(run_dir)  # safe twice


async def test_an_existing_run_directory_is_refused_and_left_alone(tmp_path: Path) -> None:
    run_dir = tmp_path / "rigs" / "run" / "rig1"
    run_dir.mkdir(parents=True)
    (run_dir / "keep").write_text("x")
    with pytest.raises(FileExistsError):
        rundir.make_run_dir(run_dir, DISK_MB)
    assert (run_dir / "keep").read_text() == "x" and not mounted(run_dir / rundir.WORK)


async def test_a_preparation_that_cannot_mount_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(image: Path, target: Path) -> None:
        raise Unavailable(f"could not mount the disk of {target}")

    monkeypatch.setattr(disks, "_mount", refuse)
    run_dir = tmp_path / "rigs" / "run" / "rig1"
    with pytest.raises(Unavailable):
        rundir.make_run_dir(run_dir, DISK_MB)
    assert not run_dir.exists()


async def test_the_leftovers_of_a_stopped_server_are_detached_and_a_live_ones_kept(tmp_path: Path) -> None:
    run_root = tmp_path / "rigs" / "run"
    gone, reused, live = run_root / "gone", run_root / "reused", run_root / "live"
    for run_dir in (gone, reused, live):
        rundir.make_run_dir(run_dir, DISK_MB)
    dead = subprocess.Popen(["true"])
    dead.wait()
    (gone / rundir.OWNER).write_text(procs.identity(dead.pid))  # its server is gone (its QEMU died with it)
    (reused / rundir.OWNER).write_text(f"{os.getpid()}:1")  # a server long gone whose pid this process now has
    enclosure = run_root / "enc"  # an enclosure rig's directory: its own backend clears it
    enclosure.mkdir()
    (enclosure / "owner").write_text(str(dead.pid))
    try:
        assert rundir.clear_leftovers(run_root) == 2
        for cleared in (gone, reused):
            assert not mounted(cleared / rundir.WORK) and not cleared.exists()
        assert mounted(live / rundir.WORK) and enclosure.is_dir()
    finally:
        for run_dir in (gone, reused, live):
            rundir.remove_run_dir(run_dir)


def test_the_vm_reports_a_failed_write_to_the_guest_rather_than_stopping() -> None:
    argv = qemu_argv("/usr/bin/qemu-system-x86_64", 3, 4, "tcg", memory_mib=1024, cpus=2)
    drive = argv[argv.index("-drive") + 1]
    assert drive.startswith(f"file={OVERLAY_INSIDE},") and "werror=report" in drive.split(",")
