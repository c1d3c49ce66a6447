"""One QEMU process running a desktop VM: a copy-on-write overlay of an image, its monitor (QMP) and its guest
agent's port, each a unix socket in the machine's run directory.

QEMU runs inside the sandbox of ``qemubox`` (no network, no host files but ``/usr``, the image read-only and the
machine's work directory; ``/dev/kvm`` only under KVM; resource limits; dies with the server), under its own
seccomp filter too. The run directory is the server's alone::

    <run_dir>/qmp.sock, qga.sock   bound and listened on by the server, handed to QEMU as descriptors
    <run_dir>/vm/overlay.qcow2     the one directory the sandbox may write (seen there as /vm), a disk of its
                                   own bounding the overlay (``rundir``: ``<run_dir>/disk.img`` mounted on it)

so the server connects to sockets nothing in the sandbox can replace, and reads no file QEMU wrote (the console
is a ring in QEMU's memory, read over QMP). The base image is never written: the overlay is made by ``qemu-img
create -b`` in the same sandbox, naming the image by its path there (``IMAGE_INSIDE``), which ``aclose`` removes
with the directory, detaching its disk. QEMU runs in a session of its own; ``aclose`` asks it to quit over QMP
and kills its process group when it does not within a few seconds.

The display card is QEMU's standard VGA (the guest's bochs DRM driver, modes set through RandR), the keyboard
the PC's own, the pointer an absolute virtio tablet bound to the display card: QMP's ``input-send-event`` naming
the card reaches the guest through them (without the binding QEMU hands buttons to the PS/2 mouse, the first
handler of their kind, and positions to the tablet, the only absolute one).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import shutil
import signal
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from hangar.core.disks import DEFAULT_RIG_DISK_MB
from hangar.errors import HangarError, Unavailable
from hangar.rigs.backends import qemubox
from hangar.rigs.backends.fullvm import rundir
from hangar.rigs.backends.fullvm.qga import GuestAgentClient
from hangar.rigs.backends.fullvm.qmp import QmpClient
from hangar.rigs.backends.kvmprobe import KVM_DEVICE

QEMU = "qemu-system-x86_64"
QEMU_IMG = "qemu-img"
ACCELERATORS = {"fullvm-kvm": "kvm", "fullvm-tcg": "tcg"}
MEMORY_MIB = 1024
CPUS = 2
SOCKET_WAIT_S = 10.0  # QEMU greets on its monitor within moments of starting
QUIT_WAIT_S = 5.0
GUEST_AGENT_PORT = "org.qemu.guest_agent.0"
DISPLAY_CARD = "video0"  # input events name it, so they reach the tablet bound to it (below)
# The guest's serial console goes to a ring in QEMU's memory, never to a file: the guest writes it without limit.
# The newest CONSOLE_BYTES are kept there, and as many again here once read (``Machine.read_console``).
CONSOLE = "console0"
CONSOLE_BYTES = 64 * 1024
# The sandbox's view (``qemubox``): the image read-only, the work directory (``<run_dir>/vm``) writable.
IMAGE_INSIDE = "/image/base.qcow2"
WORK, WORK_INSIDE = rundir.WORK, "/vm"
OVERLAY = "overlay.qcow2"
OVERLAY_INSIDE = f"{WORK_INSIDE}/{OVERLAY}"
QEMU_IMG_ADDRESS_SPACE = 1 << 30  # qemu-img's own advice for untrusted images


def console_argv() -> list[str]:
    """QEMU's arguments putting the first serial port in a ring of ``CONSOLE_BYTES`` (QMP ``ringbuf-read``)."""
    return ["-chardev", f"ringbuf,id={CONSOLE},size={CONSOLE_BYTES}", "-serial", f"chardev:{CONSOLE}"]


async def read_ring(qmp: QmpClient) -> bytes:
    """What the guest wrote to its console since the last read (the ring's content, at most ``CONSOLE_BYTES``)."""
    said = await qmp.execute("ringbuf-read", {"device": CONSOLE, "size": CONSOLE_BYTES, "format": "base64"})
    try:
        return base64.b64decode(said if isinstance(said, str) else "", validate=True)
    except ValueError as exc:
        raise Unavailable("QEMU answered ringbuf-read with something that is not base64") from exc


def qemu_argv(qemu: str, qmp_fd: int, qga_fd: int, accel: str, *, memory_mib: int, cpus: int) -> list[str]:
    """QEMU's command line inside the sandbox: the overlay at ``OVERLAY_INSIDE``, its monitor and guest agent's
    port on the listening sockets ``qmp_fd`` and ``qga_fd`` the server made."""
    return [
        qemu, "-accel", accel, "-machine", "pc", "-cpu", "host" if accel == "kvm" else "max",
        "-smp", str(cpus), "-m", str(memory_mib), "-nodefaults", "-no-user-config", "-display", "none",
        "-vga", "none", "-device", f"VGA,id={DISPLAY_CARD}", "-nic", "none",
        # The guest is the image maker's: QEMU itself may not spawn, raise privileges or use obsolete calls.
        "-sandbox", "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny",
        # A write past the overlay's disk (``rundir``) fails in the guest as an I/O error, and the VM runs on:
        # QEMU's default for virtio stops the VM instead, leaving a rig that hangs until a `cont` that fails again.
        "-drive", f"file={OVERLAY_INSIDE},format=qcow2,if=virtio,cache=unsafe,discard=unmap,werror=report",
        "-device", f"virtio-tablet-pci,display={DISPLAY_CARD}",
        "-chardev", f"socket,id=qmp0,fd={qmp_fd},server=on,wait=off", "-mon", "chardev=qmp0,mode=control",
        "-chardev", f"socket,id=qga0,fd={qga_fd},server=on,wait=off",
        "-device", "virtio-serial-pci", "-device", f"virtserialport,chardev=qga0,name={GUEST_AGENT_PORT}",
        *console_argv(),
    ]  # fmt: skip


@dataclass
class Machine:
    """A running VM and its two clients. ``boot_s`` is how long the guest agent took to answer after start."""

    run_dir: Path
    process: asyncio.subprocess.Process
    qmp: QmpClient
    agent: GuestAgentClient
    boot_s: float = 0.0
    _closed: bool = field(default=False, repr=False)
    _console: bytes = field(default=b"", repr=False)  # the newest CONSOLE_BYTES read from the ring

    @property
    def overlay(self) -> Path:
        return self.run_dir / WORK / OVERLAY

    async def read_console(self) -> None:
        """Take what the guest wrote to its console into ``console_tail`` (the newest ``CONSOLE_BYTES``)."""
        with contextlib.suppress(HangarError):  # a machine that stopped keeps what was read
            self._console = (self._console + await read_ring(self.qmp))[-CONSOLE_BYTES:]

    def console_tail(self, chars: int = 800) -> str:
        """The end of the guest's serial console (its kernel and init messages) as last read, for diagnosing."""
        return self._console[-chars:].decode("utf-8", "replace")

    async def aclose(self) -> None:
        """Stop the VM and remove its overlay and sockets (safe twice)."""
        if self._closed:
            return
        self._closed = True
        if self.process.returncode is None:
            with contextlib.suppress(Exception):
                await self.qmp.execute("quit", timeout_s=QUIT_WAIT_S)
            try:
                await asyncio.wait_for(self.process.wait(), QUIT_WAIT_S)
            except TimeoutError:
                _kill_group(self.process.pid)
                await self.process.wait()
        await self.qmp.aclose()
        await self.agent.aclose()
        await asyncio.to_thread(rundir.remove_run_dir, self.run_dir)


async def start_machine(
    image: Path,
    run_dir: Path,
    backend: str,
    *,
    agent_deadline_s: float,
    memory_mib: int = MEMORY_MIB,
    cpus: int = CPUS,
    kvm_device: str = KVM_DEVICE,
    disk_mb: int = DEFAULT_RIG_DISK_MB,
) -> Machine:
    """Boot ``image`` (through an overlay in ``run_dir``, which must not exist, on a disk of ``disk_mb`` MB)
    under ``backend``'s accelerator and wait for its guest agent to answer, at most ``agent_deadline_s``. On any
    failure nothing is left running and ``run_dir`` is gone."""
    qemu = shutil.which(QEMU)
    qemu_img = shutil.which(QEMU_IMG)
    if qemu is None or qemu_img is None or shutil.which("bwrap") is None:
        raise Unavailable(
            "a full VM needs qemu-system-x86_64, qemu-img and bwrap (Debian packages qemu-system-x86, qemu-utils, "
            "bubblewrap)"
        )
    if not image.is_absolute():
        raise ValueError("the image path must be absolute")
    accel = ACCELERATORS[backend]
    await asyncio.to_thread(rundir.make_run_dir, run_dir, disk_mb)
    process: asyncio.subprocess.Process | None = None
    qmp: QmpClient | None = None
    try:
        binds = machine_binds(image, run_dir)
        try:
            await make_overlay(qemu_img, binds)
            with _listening(run_dir / "qmp.sock") as qmp_sock, _listening(run_dir / "qga.sock") as qga_sock:
                argv = qemu_argv(qemu, qmp_sock.fileno(), qga_sock.fileno(), accel, memory_mib=memory_mib, cpus=cpus)
                box = qemubox.sandboxed(
                    argv, binds, kvm_device=kvm_device if accel == "kvm" else None,
                    address_space=qemubox.address_space(memory_mib, accel), chdir=WORK_INSIDE,
                    extra_fds=(qmp_sock.fileno(), qga_sock.fileno()),
                )  # fmt: skip
                started = time.monotonic()
                process = await qemubox.start(box, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
        finally:
            for bind in binds:
                os.close(bind.fd)
        qmp = await _connect_monitor(process, run_dir)
        agent = await GuestAgentClient.connect(run_dir / "qga.sock")
        machine = Machine(run_dir, process, qmp, agent)
        try:
            await agent.wait_ready(max(agent_deadline_s - (time.monotonic() - started), 0.1))
        except BaseException:
            await machine.aclose()
            raise
        machine.boot_s = time.monotonic() - started
        return machine
    except BaseException:
        if process is not None and process.returncode is None:
            _kill_group(process.pid)
            await process.wait()
        if qmp is not None:
            await qmp.aclose()
        await asyncio.to_thread(rundir.remove_run_dir, run_dir)
        raise


async def make_overlay(qemu_img: str, binds: list[qemubox.Bind]) -> None:
    """``qemu-img create`` the overlay of the image in the sandbox of ``binds`` (``machine_binds``)."""
    create = [qemu_img, "create", "-q", "-f", "qcow2", "-F", "qcow2", "-b", IMAGE_INSIDE, OVERLAY_INSIDE]
    await _run(qemubox.sandboxed(create, binds, address_space=QEMU_IMG_ADDRESS_SPACE), QEMU_IMG)


def machine_binds(image: Path, run_dir: Path) -> list[qemubox.Bind]:
    """The image (read-only) and the work directory (writable), opened by the server without following links."""
    try:
        image_fd = qemubox.open_file(image)
    except OSError as exc:
        raise Unavailable(f"the image cannot be opened: {exc.strerror or exc}") from exc
    try:
        work_fd = qemubox.open_dir(run_dir / WORK)
    except BaseException:
        os.close(image_fd)
        raise
    return [qemubox.Bind(image_fd, IMAGE_INSIDE), qemubox.Bind(work_fd, WORK_INSIDE, writable=True)]


@contextlib.contextmanager
def _listening(path: Path) -> Iterator[socket.socket]:
    """A unix socket the server binds and listens on, handed to QEMU; the server's copy closes once QEMU has its
    own, so a QEMU that dies leaves nobody listening (a connection waiting on it fails at once)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(str(path))
        sock.listen(4)
        yield sock
    finally:
        sock.close()


async def _connect_monitor(process: asyncio.subprocess.Process, run_dir: Path) -> QmpClient:
    """QMP's greeting, or QEMU's own words when it exits first (a bad option, a missing accelerator)."""
    connect = asyncio.ensure_future(QmpClient.connect(run_dir / "qmp.sock", timeout_s=SOCKET_WAIT_S))
    exited = asyncio.ensure_future(process.wait())
    try:
        await asyncio.wait((connect, exited), return_when=asyncio.FIRST_COMPLETED)
        if connect.done():
            try:
                return connect.result()
            except (Unavailable, EOFError, OSError, ValueError) as exc:
                with contextlib.suppress(TimeoutError):  # a connection cut by QEMU's exit: say why it exited
                    await asyncio.wait_for(asyncio.shield(exited), 1.0)
                if not exited.done():
                    raise Unavailable(f"the VM's monitor failed: {exc}") from exc
        said = b"" if process.stderr is None else await process.stderr.read()
        text = said.decode("utf-8", "replace").strip()[-400:]
        raise Unavailable(f"QEMU did not start: {text or f'it exited with {process.returncode}'}")
    finally:
        exited.cancel()
        if not connect.done():
            connect.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await connect


async def _run(box: qemubox.Sandboxed, name: str) -> None:
    proc = await qemubox.start(box, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    out, _ = await proc.communicate()
    if proc.returncode != 0:
        raise Unavailable(f"{name} failed: {out.decode('utf-8', 'replace').strip()[-400:]}")


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)
