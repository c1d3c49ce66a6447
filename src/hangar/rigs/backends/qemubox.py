"""Every QEMU process Hangar starts (a full VM, the KVM probe's tiny guest, ``qemu-img`` reading or layering an
image) runs inside a bubblewrap sandbox: a guest that escapes into QEMU, or an image crafted against
``qemu-img``, finds itself in a process that sees almost nothing of the host and can reach nothing.

The sandbox has new user, PID, IPC, UTS, network (loopback only: the VMs have no network) and cgroup namespaces,
no capabilities, runs as ``nobody`` as far as it can tell, and dies with the server (``--die-with-parent``). On
the host it runs as the server's user, or, when the server runs as root, as a user of its own (``QEMU_UID``,
through ``setpriv`` inside the sandbox, with the KVM device's group when it runs under KVM, the user namespace
then made by a second, unprivileged bubblewrap); the files it may write are handed to that user
(``hand_over``), and the images it reads must be readable by it (imported images are world-readable).
Its root is an empty tmpfs holding only:

* ``/usr`` read-only (QEMU, its modules and firmware all live there on Debian) with the usual ``/bin``, ``/lib``
  links and ``/etc/ld.so.cache``, and its own ``/proc`` (the sandbox's processes only);
* ``/dev`` with ``/dev/null`` alone, plus ``/dev/kvm`` only for a machine or probe that runs under KVM;
* what the caller binds, each from a descriptor the server opened itself (``Bind``): the image read-only, and the
  machine's work directory (its overlay) writable. The machine's sockets are not among them: the server binds
  them in a directory of its own and hands QEMU the listening descriptors, so nothing in the sandbox can swap
  the paths the server connects to.

Inside, ``prlimit`` caps the address space (the guest's memory plus QEMU's own, ``address_space``), the number
of processes (counted in the sandbox's user namespace, so QEMU's threads and nothing else) and core dumps; QEMU
keeps its own seccomp filter (``-sandbox on``, see the callers). Every host file is bound by descriptor, so no
command line in the sandbox names a host path but the system's own (``/usr``, ``/dev/null``, the KVM device).
"""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

KVM_INSIDE = "/dev/kvm"
NOBODY = 65534  # the sandbox's user, as it sees itself
# The host user QEMU runs as when the server runs as root: one of its own, beside the rig user in the range no
# convention hands out, so a QEMU shares no files or processes with the server or a rig, and its process limit
# counts (the kernel never counts root's processes).
QEMU_UID = 2_100_000_100
QEMU_GID = QEMU_UID
EXE_DIR_INSIDE = "/run/qemu-bin"  # where a QEMU installed outside /usr is bound (read-only)
OVERHEAD_BYTES = 3 << 29  # QEMU's own mappings beside guest RAM: libraries, thread stacks, malloc arenas
TCG_CODE_BYTES = 1 << 30  # the translation buffer QEMU reserves for TCG (its default for system emulation)
MAX_PROCESSES = 64  # QEMU's threads (vCPUs, I/O workers) stay well below; a fork bomb meets it
_SYSTEM = (
    "--ro-bind", "/usr", "/usr", "--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache",
    "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/bin", "/bin",
    "--symlink", "usr/sbin", "/sbin",
)  # fmt: skip


@dataclass(frozen=True)
class Bind:
    """A host file or directory the sandbox sees at ``inside``, by the descriptor the server opened (``fd``)."""

    fd: int
    inside: str
    writable: bool = False


def address_space(memory_mib: int, accel: str) -> int:
    """The address space QEMU may map: the guest's memory, TCG's translation buffer, and QEMU's own."""
    return (memory_mib << 20) + (TCG_CODE_BYTES if accel == "tcg" else 0) + OVERHEAD_BYTES


def hand_over(path: Path) -> None:
    """Make a server-made file or directory the sandbox writes (a work directory, a disk) the QEMU user's."""
    if os.geteuid() == 0:
        os.chown(path, QEMU_UID, QEMU_GID, follow_symlinks=False)


def device_group(device: str) -> int | None:
    """The group through which the QEMU user of a root server opens ``device``: its group when that group may read
    and write it and is not root's (root's group is never handed out); None when it needs none (the device is
    open to all) or none will do (``device_usable`` says so first)."""
    st = os.stat(device)
    if st.st_mode & 0o006 == 0o006:
        return None
    return st.st_gid if st.st_mode & 0o060 == 0o060 and st.st_gid != 0 else None


def device_usable(device: str) -> bool:
    """Whether the QEMU user of a root server can open ``device`` read-write (see ``device_group``)."""
    st = os.stat(device)
    return st.st_mode & 0o006 == 0o006 or device_group(device) is not None


def _as_qemu_user(kvm_device: str | None, chdir: str) -> list[str]:
    """Run inside a root server's sandbox: ``setpriv`` to the QEMU user (with the KVM device's group under KVM),
    then a second bubblewrap, unprivileged, for the user namespace over the same view (all of it bound again,
    ``/proc`` and ``/dev`` with it). The first, as root, could open every path the server named; the
    second's namespace is where the process limit counts the QEMU's processes alone."""
    group = device_group(kvm_device) if kvm_device is not None else None
    groups = ["--groups", str(group)] if group is not None else ["--clear-groups"]
    return [
        "/usr/bin/setpriv", f"--reuid={QEMU_UID}", f"--regid={QEMU_GID}", *groups, "--",
        "/usr/bin/bwrap", "--unshare-user", "--die-with-parent", "--uid", str(NOBODY), "--gid", str(NOBODY),
        "--dev-bind", "/", "/", "--chdir", chdir, "--",
    ]  # fmt: skip


def open_dir(path: Path) -> int:
    """A server-made directory, opened without following a link in its last component."""
    return os.open(path, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)


def open_file(path: Path) -> int:
    """A regular file the server chose (an image, a program), not followed if it is a link."""
    fd = os.open(path, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(f"{path.name} is not a regular file")
    return fd


def exe_inside(exe: str) -> tuple[str, Bind | None]:
    """Where the sandbox runs ``exe`` (an absolute host path) from: the same path under ``/usr``, else a read-only
    bind of it (the caller closes the bind's descriptor)."""
    if exe.startswith("/usr/"):
        return exe, None
    inside = f"{EXE_DIR_INSIDE}/{os.path.basename(exe)}"
    return inside, Bind(open_file(Path(exe)), inside)


def sandbox_options(binds: Sequence[Bind], *, kvm_device: str | None, chdir: str = "/") -> list[str]:
    """Bubblewrap's options for one QEMU (see the module); ``kvm_device`` (a host device path) appears as
    ``/dev/kvm`` when given."""
    # A root server's sandbox gets its user namespace from the second bubblewrap (``_as_qemu_user``), and keeps
    # only the capabilities ``setpriv`` needs to become the QEMU user (which then has none).
    user = (
        ["--unshare-user", "--uid", str(NOBODY), "--gid", str(NOBODY), "--cap-drop", "ALL"]
        if os.geteuid() != 0
        else ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    )
    argv = [
        *user, "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net", "--unshare-cgroup-try",
        "--die-with-parent", "--new-session", "--hostname", "qemu", *_SYSTEM,
        "--proc", "/proc", "--dir", "/dev", "--dev-bind", "/dev/null", "/dev/null", "--dir", "/tmp",
    ]  # fmt: skip
    if kvm_device is not None:
        argv += ["--dev-bind", kvm_device, KVM_INSIDE]
    for bind in binds:  # a parent bubblewrap makes is private to its maker unless told
        argv += ["--perms", "0755", "--dir", os.path.dirname(bind.inside)]
        argv += ["--bind-fd" if bind.writable else "--ro-bind-fd", str(bind.fd), bind.inside]
    return [*argv, "--chdir", chdir, "--clearenv", "--setenv", "PATH", "/usr/bin"]


def limits_argv(address_space: int, cpu_s: int | None = None) -> list[str]:
    """``prlimit`` run inside the sandbox, so the process count is the sandbox user's alone."""
    cpu = [f"--cpu={cpu_s}"] if cpu_s is not None else []
    return ["/usr/bin/prlimit", f"--as={address_space}", f"--nproc={MAX_PROCESSES}", "--core=0", *cpu, "--"]


@dataclass
class Sandboxed:
    """A command ready to start confined: ``argv`` and the descriptors to pass (``pass_fds``); ``close`` once
    the process has started (or failed to)."""

    argv: list[str]
    pass_fds: tuple[int, ...]
    _owned: tuple[int, ...]

    def close(self) -> None:
        for fd in self._owned:
            os.close(fd)


def sandboxed(
    argv: Sequence[str],
    binds: Sequence[Bind],
    *,
    kvm_device: str | None = None,
    address_space: int,
    cpu_s: int | None = None,
    chdir: str = "/",
    extra_fds: Sequence[int] = (),
) -> Sandboxed:
    """``argv`` (its first item an absolute host path) wrapped in the sandbox, limited to ``address_space`` bytes
    and ``cpu_s`` seconds of CPU when given. ``extra_fds`` (listening sockets) are passed through under their own
    numbers. The binds' descriptors stay the caller's."""
    exe, exe_bind = exe_inside(argv[0])
    all_binds = [*binds, *([exe_bind] if exe_bind is not None else [])]
    # A root server's first sandbox stays at / (it has no right to enter the QEMU user's directories).
    options = sandbox_options(all_binds, kvm_device=kvm_device, chdir="/" if os.geteuid() == 0 else chdir)
    owned = (exe_bind.fd,) if exe_bind is not None else ()
    user = _as_qemu_user(kvm_device, chdir) if os.geteuid() == 0 else []
    wrapped = ["bwrap", *options, "--", *user, *limits_argv(address_space, cpu_s), exe, *argv[1:]]
    return Sandboxed(wrapped, (*owned, *(b.fd for b in binds), *extra_fds), owned)


async def start(box: Sandboxed, *, stdout: int, stderr: int) -> asyncio.subprocess.Process:
    """Start ``box`` in a session of its own (a hung QEMU and whatever it started are killed as one group), its
    stdin empty; the box's own descriptors are closed once it has started or failed to."""
    try:
        return await asyncio.create_subprocess_exec(
            *box.argv, stdin=asyncio.subprocess.DEVNULL, stdout=stdout, stderr=stderr, start_new_session=True,
            pass_fds=box.pass_fds, env={"PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")},
        )  # fmt: skip
    finally:
        box.close()
