"""A small seccomp filter for rig processes, built with libseccomp and handed to bubblewrap (``--seccomp FD``) as
BPF.

The rig user has no capabilities, but a new user namespace would give it a fresh set inside, and with it
kernel surface (nested mounts, netfilter tables of a new network namespace) a terminal does not need. The
filter refuses creating user namespaces (``unshare``/``clone`` with ``CLONE_NEWUSER``; ``clone3`` reports
ENOSYS so the C library falls back to ``clone``, whose flags can be inspected), plus kernel keyrings, BPF,
perf events, userfaultfd, io_uring and module or kexec loading. Everything else is allowed. A call made through
another ABI than the filter's one architecture (32-bit compat, and on x86-64 the x32 numbers, which share its
audit architecture) gets EPERM. Other architectures than x86-64 and arm64 get no filter (``program`` returns
None).

libseccomp (the C library, Debian's libseccomp2) is reached through pyseccomp, a ctypes binding, loaded only
when a filter is built: the probe names the package when the library is missing.
"""

from __future__ import annotations

import errno
import functools
import platform
import tempfile

CLONE_NEWUSER = 0x10000000
# machine -> the kernel's audit architecture, which is also libseccomp's architecture token
AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
REFUSED = ("keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd", "kexec_load",
           "kexec_file_load", "init_module", "finit_module", "delete_module", "io_uring_setup", "io_uring_enter",
           "io_uring_register")  # fmt: skip
FLAG_CHECKED = ("unshare", "clone")  # refused when the first argument (the flags) asks for CLONE_NEWUSER


def program(machine: str | None = None) -> bytes | None:
    """The filter as BPF for ``machine`` (this host's by default); None for an architecture we do not filter."""
    arch = AUDIT_ARCH.get(machine or platform.machine())
    if arch is None:
        return None
    import pyseccomp as sc  # loads libseccomp, which the probe checked for

    eperm = sc.ERRNO(errno.EPERM)
    rules = sc.SyscallFilter(sc.ALLOW)
    rules.set_attr(sc.Attr.ACT_BADARCH, eperm)
    if arch != sc.system_arch():
        # syscalls are still named by this host's numbers; libseccomp translates them to the target's
        rules.add_arch(arch)
        rules.remove_arch(sc.Arch.NATIVE)
    for name in FLAG_CHECKED:
        rules.add_rule(eperm, name, sc.Arg(0, sc.MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER))
    for name in REFUSED:
        rules.add_rule(eperm, name)
    rules.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    with tempfile.TemporaryFile() as out:
        rules.export_bpf(out)
        out.seek(0)
        return out.read()


@functools.cache
def host_program() -> bytes | None:
    """``program`` for this host, built once: each rig and each command run apart in one is handed it."""
    return program()
