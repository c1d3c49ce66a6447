"""Whether KVM works on this host, found by booting a tiny guest under QEMU with a deadline.

``/dev/kvm`` being there is not enough: on some hosts (nested virtualisation without support underneath, a broken
module) a KVM guest never runs an instruction and QEMU waits forever. So the probe boots the smallest guest there
is, a boot sector whose only work is writing one byte to QEMU's ``isa-debug-exit`` port (QEMU then exits with
``byte * 2 + 1``), and a guest that has not exited by the deadline has hung: its process group is killed and KVM
is marked unusable, with the reason. Nothing waits on KVM longer than the deadline, ever.

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

DEADLINE_S = 10.0  # a boot sector under KVM exits in well under a second; TCG takes a little longer
KVM_DEVICE = "/dev/kvm"
QEMU = "qemu-system-x86_64"
EXIT_BYTE = 0x31
EXIT_CODE = (EXIT_BYTE << 1) | 1  # what isa-debug-exit makes of the byte
# Real mode at 0x7c00: mov al, EXIT_BYTE; out 0xf4, al; cli; then hlt forever (QEMU has exited by then).
_CODE = bytes((0xB0, EXIT_BYTE, 0xE6, 0xF4, 0xFA, 0xF4, 0xEB, 0xFD))
BOOT_SECTOR = _CODE + b"\0" * (510 - len(_CODE)) + b"\x55\xaa"
TAIL_CHARS = 400


@dataclass(frozen=True)
class KvmVerdict:
    usable: bool
    reason: str | None  # why not, in one sentence a person can act on
    seconds: float  # how long the probe took


def qemu_argv(qemu: str, disk: Path, accel: str) -> list[str]:
    return [
        qemu, "-accel", accel, "-machine", "pc", "-m", "16", "-display", "none", "-nodefaults", "-no-reboot",
        "-serial", "none", "-monitor", "none", "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04",
        "-drive", f"file={disk},format=raw,if=ide",
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
    with tempfile.TemporaryDirectory(prefix="hangar-kvm-probe-") as tmp:
        disk = Path(tmp) / "boot.img"
        disk.write_bytes(BOOT_SECTOR)
        proc = await asyncio.create_subprocess_exec(
            *qemu_argv(found, disk, accel),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,  # a hung QEMU and anything it started are killed as one group
        )
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
    if not os.access(device, os.R_OK | os.W_OK):
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
