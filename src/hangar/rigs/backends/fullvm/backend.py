"""The full-VM backends for computer rigs (``fullvm-kvm``, ``fullvm-tcg``): a rig is the VM ``rig.open_vm_rig``
boots from an imported image (named by its id in ``RigSpec.image_id``), seen by the manager as a ``RigHandle``.

What a VM rig does and how:
- its desktop (``desktop()``) is the VM's (``VmDesktop``: input through QMP, capture through the guest agent), so
  ``computer_use``, the live view and the clipboard lane drive it as they drive the enclosure's;
- ``exec`` runs ``bash -lc`` as the rig user through the guest agent (``VmRig.exec``);
- parking stops the VM's vCPUs (QMP ``stop``; its RAM stays resident, as the spec says of a parked VM) and waking
  continues them (QMP ``cont``);
- its resident memory is its QEMU's (the process and whatever it started), never less than the guest's RAM: the
  guest may touch all of it at any moment, and a parked VM still holds what it touched;
- its overlay lives on a disk of the rig's size (``RigSpec.disk_mb``, the server setting ``confine.rigDiskMb``;
  see ``rundir``), so the guest cannot fill the host's disk;
- closing stops QEMU and removes the rig's run directory with its overlay and disk (``Machine.aclose``); the
  directories of a server process that stopped without closing its VMs are cleared at the first start after.

A VM has no network at all (QEMU gives it none), so it has no ports to forward and no egress to grant; it has no
terminal lane, no streamed commands and no file lane (the guest agent's file calls are not wired): those refuse,
saying so.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from pathlib import Path
from typing import ClassVar, NoReturn

from hangar.core.confine import ExecResult
from hangar.errors import InvalidArgs, Refused, Unavailable
from hangar.rigs.backends.base import Command, Pty, RigBackend, RigHandle, RigSpec
from hangar.rigs.backends.capabilities import Desktop
from hangar.rigs.backends.fullvm.machine import CPUS, MEMORY_MIB, QEMU, QEMU_IMG
from hangar.rigs.backends.fullvm.rig import VmRig, open_vm_rig
from hangar.rigs.backends.fullvm.rundir import clear_leftovers
from hangar.rigs.backends.kvmprobe import KvmProbe

# What QEMU holds beyond the guest's RAM (its own code, device state, TCG's translated code): counted against the
# memory budget while the VM boots, with the RAM.
QEMU_OVERHEAD_MB = 256
VM_MEMORY_MB = MEMORY_MIB + QEMU_OVERHEAD_MB  # a VM rig's ceiling while it boots
VM_VCPUS = CPUS
EXEC_UNBOUNDED_S = 3600.0  # an exec asked without a limit still ends (the guest agent's run needs one)
NO_HOST = (
    "a full-VM rig has no {what}: drive it with computer_use and rig.exec (QEMU gives the VM no network, and "
    "its files are the guest's)"
)


class VmHandle(RigHandle):
    def __init__(self, spec: RigSpec, vm: VmRig) -> None:
        self.spec = spec
        self.vm = vm
        self._closed = False

    def _refuse(self, what: str) -> NoReturn:
        raise Refused(NO_HOST.format(what=what))

    def desktop(self) -> Desktop:
        return self.vm.desktop

    async def exec(self, command: str, *, timeout_s: float | None, stdin: bytes | None = None) -> ExecResult:
        return await self.vm.exec(command, timeout_s=timeout_s or EXEC_UNBOUNDED_S, stdin=stdin)

    async def run(self, command: Command, on_stdout: Callable[[bytes], Awaitable[None]] | None) -> ExecResult:
        self._refuse("streamed commands")

    async def open_pty(self, cols: int, rows: int) -> Pty:
        self._refuse("terminal lane")

    async def park(self) -> None:
        await self.vm.machine.qmp.execute("stop")  # QEMU pauses the vCPUs; stopping a stopped VM is no error

    async def wake(self) -> None:
        await self.vm.machine.qmp.execute("cont")

    async def resident_mb(self) -> int:
        return max(tree_resident_mb(self.vm.machine.process.pid), MEMORY_MIB)

    async def listening_ports(self) -> list[int]:
        return []

    async def forward(self, guest_port: int, host: str, host_port: int | None) -> int:
        self._refuse("ports to forward")

    async def unforward(self, host_port: int) -> None:
        return None

    async def grant_hosts(self, hosts: Iterable[str]) -> None:
        self._refuse("network to grant hosts on")

    async def write_file(self, guest_path: str, data: AsyncIterator[bytes] | bytes, *, exclusive: bool) -> None:
        self._refuse("file lane")

    async def read_file(self, guest_path: str) -> AsyncIterator[bytes]:
        self._refuse("file lane")
        yield b""  # an async generator, as the interface has it

    def alive(self) -> bool:
        return not self._closed and self.vm.machine.process.returncode is None

    async def wait_dead(self) -> None:
        await self.vm.machine.process.wait()

    def death_detail(self) -> str:
        code = self.vm.machine.process.returncode
        return f"the VM's QEMU exited (code {code}) underneath the rig"

    async def aclose(self) -> None:
        self._closed = True
        await self.vm.aclose()  # safe twice: the machine stops once


def tree_resident_mb(pid: int) -> int:
    """The resident memory of ``pid`` and every process below it, in MB rounded up (0 once they are gone)."""
    total_kb, seen, todo = 0, set[int](), [pid]
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        with contextlib.suppress(OSError, ValueError):
            for line in Path(f"/proc/{current}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total_kb += int(line.split()[1])
            for task in os.listdir(f"/proc/{current}/task"):
                children = Path(f"/proc/{current}/task/{task}/children").read_text().split()
                todo.extend(int(c) for c in children)
    return -(-total_kb // 1024)


class FullVmBackend(RigBackend):
    """Boots computer rigs as full VMs under one accelerator (the subclasses name it)."""

    def __init__(self, rigs_root: Path, kvm: KvmProbe) -> None:
        self.rigs_root = rigs_root
        self.kvm = kvm
        self._swept = False

    def unavailable_reason(self) -> str | None:
        if shutil.which(QEMU) is None or shutil.which(QEMU_IMG) is None:
            return f"a full VM needs {QEMU} and {QEMU_IMG} (Debian packages qemu-system-x86, qemu-utils)"
        return None

    async def start(self, spec: RigSpec, progress: Callable[[str], None]) -> RigHandle:
        if spec.image_id is None:
            raise InvalidArgs(f"a {self.name} rig boots an imported image: name it with imageId", field="imageId")
        if not self._swept:
            self._swept = True
            await asyncio.to_thread(clear_leftovers, self.rigs_root / "run")
        verdict = await self.kvm.verdict() if self.name == "fullvm-kvm" else None
        progress(f"booting image {spec.image_id} under {self.name} (to its guest agent, then its X server)")
        try:
            vm = await open_vm_rig(self.rigs_root, spec.image_id, spec.rig_id, self.name, verdict, disk_mb=spec.disk_mb)
        except ValueError as exc:  # a rig id open_vm_rig will not name a directory after: the server's own
            raise Unavailable(f"the VM could not be started: {exc}") from exc
        return VmHandle(spec, vm)


class KvmBackend(FullVmBackend):
    name: ClassVar[str] = "fullvm-kvm"


class TcgBackend(FullVmBackend):
    name: ClassVar[str] = "fullvm-tcg"
