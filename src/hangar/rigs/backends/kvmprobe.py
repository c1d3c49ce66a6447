"""Whether KVM works on this host, found by booting a tiny guest under QEMU with a deadline.

``/dev/kvm`` being there is not enough: on some hosts (nested virtualisation without support underneath, a broken
module) a KVM guest never runs an instruction and QEMU waits forever. So the probe boots the smallest guest there
is, a boot sector whose only work is writing one byte to QEMU's ``isa-debug-exit`` port (QEMU then exits with
``byte * 2 + 1``), and a guest that has not exited by the deadline has hung: its process group is killed and KVM
is marked unusable, with the reason. Nothing waits on KVM longer than the deadline, ever.

The tiny guest's QEMU runs in the same sandbox as every QEMU (``qemubox``): its disk read-only, ``/dev/kvm``
only when probing KVM, nothing else of the host.

The verdict is kept for the life of the process (``KvmProbe``): the host's KVM does not change under a server.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from hangar.rigs.backends import qemubox

DEADLINE_S = 10.0  # a boot sector under KVM exits in well under a second; TCG takes a little longer
KVM_DEVICE = "/dev/kvm"
QEMU = "qemu-system-x86_64"
EXIT_BYTE = 0x31
EXIT_CODE = (EXIT_BYTE << 1) | 1  # what isa-debug-exit makes of the byte
# Real mode at 0x7c00: mov al, EXIT_BYTE; out 0xf4, al; cli; then hlt forever (QEMU has exited by then).
_CODE = bytes((0xB0, EXIT_BYTE, 0xE6, 0xF4, 0xFA, 0xF4, 0xEB, 0xFD))
BOOT_SECTOR = _CODE + b"\0" * (510 - len(_CODE)) + b"\x55\xaa"
TAIL_CHARS = 400
DISK_INSIDE = "/probe/boot.img"
MEMORY_MIB = 16


@dataclass(frozen=True)
class KvmVerdict:
    usable: bool
    reason: str | None  # why not, in one sentence a person can act on
    seconds: float  # how long the probe took


def qemu_argv(qemu: str, accel: str) -> list[str]:
    """The tiny guest's QEMU, inside the sandbox (its disk at ``DISK_INSIDE``)."""
    return [
        qemu, "-accel", accel, "-machine", "pc", "-m", str(MEMORY_MIB), "-display", "none", "-nodefaults",
        "-no-reboot", "-no-user-config", "-serial", "none", "-monitor", "none",
        "-sandbox", "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny",
        "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04", "-drive", f"file={DISK_INSIDE},format=raw,if=ide",
    ]  # fmt: skip


async def probe_kvm(
    *, deadline_s: float = DEADLINE_S, qemu: str | None = None, device: str = KVM_DEVICE, accel: str = "kvm"
) -> KvmVerdict:
    """Boot the tiny guest under ``accel`` (``kvm``; tests also use ``tcg``) and say whether it ran."""
    started = time.monotonic()

    def verdict(reason: str | None) -> KvmVerdict:
        return KvmVerdict(reason is None, reason, time.monotonic() - started)

    if accel == "kvm" and (missing := _device_reason(device)) is not None:
        return verdict(missing)
    found = shutil.which(qemu or QEMU)
    if found is None:
        return verdict(f"{qemu or QEMU} is not installed (Debian package qemu-system-x86)")
    if shutil.which("bwrap") is None:
        return verdict("QEMU runs confined, and bubblewrap (bwrap) is not installed (Debian package bubblewrap)")
    with tempfile.TemporaryDirectory(prefix="hangar-kvm-probe-") as tmp:
        disk = Path(tmp) / "boot.img"
        disk.write_bytes(BOOT_SECTOR)
        qemubox.hand_over(disk)
        disk_fd = qemubox.open_file(disk)
        try:
            # Writable: QEMU refuses a read-only IDE disk (the file is the probe's own, read by nobody after).
            box = qemubox.sandboxed(
                qemu_argv(found, accel), [qemubox.Bind(disk_fd, DISK_INSIDE, writable=True)],
                kvm_device=device if accel == "kvm" else None,
                address_space=qemubox.address_space(MEMORY_MIB, accel),
            )  # fmt: skip
            proc = await qemubox.start(box, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
        finally:
            os.close(disk_fd)
        try:
            _, err = await asyncio.wait_for(proc.communicate(), deadline_s)
        except TimeoutError:
            _kill_group(proc.pid)
            await proc.wait()
            return verdict(
                f"a tiny guest did not finish booting under {accel.upper()} within {deadline_s:g} s, so "
                f"{accel.upper()} hangs on this host and is marked unusable"
            )
        finally:
            if proc.returncode is None:  # cancelled: the guest goes with the caller
                _kill_group(proc.pid)
                await proc.wait()
    if proc.returncode == EXIT_CODE:
        return verdict(None)
    said = err.decode("utf-8", "replace").strip()[-TAIL_CHARS:] or "(no output)"
    return verdict(f"QEMU could not boot a tiny guest under {accel.upper()} (exit {proc.returncode}): {said}")


def _device_reason(device: str) -> str | None:
    if not os.path.exists(device):
        return f"{device} does not exist (no KVM on this host, or it is not passed to this machine)"
    if os.geteuid() == 0:  # QEMU runs as a user of its own, with the device's group (``qemubox``)
        if not qemubox.device_usable(device):
            return (
                f"{device} must be readable and writable by a group other than root's (Debian's udev rule makes it "
                "0660 root:kvm): QEMU runs as a user of its own, with that group"
            )
    elif not os.access(device, os.R_OK | os.W_OK):
        return f"{device} cannot be opened by this server's user (add it to the kvm group)"
    return None


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)


class KvmProbe:
    """The probe's verdict, found once per process (concurrent askers share the one probe)."""

    def __init__(self, *, deadline_s: float = DEADLINE_S, qemu: str | None = None, device: str = KVM_DEVICE) -> None:
        self.deadline_s = deadline_s
        self.qemu = qemu
        self.device = device
        self._verdict: asyncio.Task[KvmVerdict] | None = None

    async def verdict(self) -> KvmVerdict:
        if self._verdict is None or (self._verdict.done() and self._verdict.cancelled()):
            self._verdict = asyncio.ensure_future(
                probe_kvm(deadline_s=self.deadline_s, qemu=self.qemu, device=self.device)
            )
        return await asyncio.shield(self._verdict)
