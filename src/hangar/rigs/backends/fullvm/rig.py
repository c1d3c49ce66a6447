"""A full-VM computer rig: an imported desktop image booted under QEMU through an overlay of its own, driven as the
spec says (input through QMP, capture and exec through the guest agent).

``open_vm_rig`` takes an image by its id (looked up among the imported images' records, never a path from input)
and the backend asked for: ``fullvm-kvm`` is refused with the KVM probe's reason where the probe found KVM unusable
(nothing ever waits on a KVM that hangs), ``fullvm-tcg`` runs only when asked for. The rig is ready once the guest
agent answers and the guest's X server does; ``aclose`` stops the VM and removes its overlay. The overlay lives on
a disk of the rig's size (``RigSpec.disk_mb``, see ``rundir``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from hangar.core.confine import ExecResult
from hangar.core.disks import DEFAULT_RIG_DISK_MB
from hangar.errors import Unavailable
from hangar.rigs.backends.fullvm.desktop import VmDesktop
from hangar.rigs.backends.fullvm.imports import image_path
from hangar.rigs.backends.fullvm.machine import Machine, start_machine
from hangar.rigs.backends.kvmprobe import KvmVerdict
from hangar.rigs.images.desktopdisk import BOOT_DISPLAY

BOOT_DEADLINE_S = 300.0  # to the guest agent; then as long again at most for its X server
RIG_USER = "rig"
_RIG_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")  # a server-made id: it names the run directory


def check_accelerator(backend: str, verdict: KvmVerdict | None) -> None:
    """``fullvm-kvm`` needs the probe's verdict that KVM works here; ``fullvm-tcg`` needs nothing."""
    if backend == "fullvm-kvm" and (verdict is None or not verdict.usable):
        reason = verdict.reason if verdict is not None else "KVM was not probed"
        raise Unavailable(
            f"fullvm-kvm cannot run on this host: {reason}; ask for backend fullvm-tcg (much slower) or open the "
            "computer rig on the enclosure"
        )


@dataclass
class VmRig:
    machine: Machine
    desktop: VmDesktop

    @property
    def overlay(self) -> Path:
        return self.machine.overlay

    async def exec(self, command: str, *, timeout_s: float, stdin: bytes | None = None) -> ExecResult:
        """``command`` with ``bash -lc`` as the rig user, through the guest agent (``guest-exec``)."""
        argv = ["/usr/sbin/runuser", "-u", RIG_USER, "--", "/bin/bash", "-lc", command]
        try:
            done = await self.machine.agent.run(argv, stdin=stdin, timeout_s=timeout_s)
        except Unavailable as exc:
            if "was killed" not in exc.message:
                raise
            return ExecResult(exit_code=128 + 9, stdout="", stderr=exc.message, timed_out=True)
        return ExecResult(
            exit_code=done.exit_code,
            stdout=done.stdout.decode("utf-8", "replace"),
            stderr=done.stderr.decode("utf-8", "replace"),
            timed_out=False,
        )

    async def aclose(self) -> None:
        await self.machine.aclose()


async def open_vm_rig(
    rigs_root: Path,
    image_id: str,
    rig_id: str,
    backend: str,
    verdict: KvmVerdict | None,
    *,
    deadline_s: float = BOOT_DEADLINE_S,
    disk_mb: int = DEFAULT_RIG_DISK_MB,
) -> VmRig:
    """Boot the imported image ``image_id`` as rig ``rig_id``, its overlay bounded to ``disk_mb`` MB."""
    check_accelerator(backend, verdict)
    image = image_path(rigs_root, image_id)
    if not _RIG_ID.match(rig_id):
        raise ValueError(f"not a rig id: {rig_id!r}")
    run_dir = rigs_root / "run" / rig_id
    machine = await start_machine(image, run_dir, backend, agent_deadline_s=deadline_s, disk_mb=disk_mb)
    desktop = VmDesktop(machine)
    try:
        await desktop.wait_ready(deadline_s)
        if await desktop.size() != BOOT_DISPLAY:  # the kernel's video= is a wish the display card may not grant
            await desktop.set_size(*BOOT_DISPLAY)
    except BaseException:
        await machine.aclose()
        raise
    return VmRig(machine, desktop)
