"""A small seccomp filter for rig processes, handed to bubblewrap (``--seccomp FD``) as raw BPF.

The rig user has no capabilities, but a new user namespace would give it a fresh set inside, and with it
kernel surface (nested mounts, netfilter tables of a new network namespace) a terminal does not need. The
filter refuses creating user namespaces (``unshare``/``clone`` with ``CLONE_NEWUSER``; ``clone3`` reports
ENOSYS so the C library falls back to ``clone``, whose flags can be inspected), plus kernel keyrings, BPF,
perf events, userfaultfd, io_uring and module or kexec loading. Everything else is allowed. Other
architectures than x86-64 and arm64 get no filter (``program`` returns None).
"""

from __future__ import annotations

import errno
import platform
import struct

CLONE_NEWUSER = 0x10000000
AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
# syscall numbers per architecture: flag-checked ones first, then those refused outright
SYSCALLS = {
    "x86_64": {"unshare": 272, "clone": 56, "clone3": 435, "keyctl": 250, "add_key": 248, "request_key": 249,
               "bpf": 321, "perf_event_open": 298, "userfaultfd": 323, "kexec_load": 246, "kexec_file_load": 320,
               "init_module": 175, "finit_module": 313, "delete_module": 176, "io_uring_setup": 425,
               "io_uring_enter": 426, "io_uring_register": 427},
    "aarch64": {"unshare": 97, "clone": 220, "clone3": 435, "keyctl": 219, "add_key": 217, "request_key": 218,
                "bpf": 280, "perf_event_open": 241, "userfaultfd": 282, "kexec_load": 104, "kexec_file_load": 294,
                "init_module": 105, "finit_module": 273, "delete_module": 106, "io_uring_setup": 425,
                "io_uring_enter": 426, "io_uring_register": 427},
}  # fmt: skip
REFUSED = ("keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd", "kexec_load",
           "kexec_file_load", "init_module", "finit_module", "delete_module", "io_uring_setup", "io_uring_enter",
           "io_uring_register")  # fmt: skip

LD_W_ABS, JEQ_K, JSET_K, RET_K = 0x20, 0x15, 0x45, 0x06
RET_ALLOW = 0x7FFF0000
RET_ERRNO = 0x00050000
OFF_NR, OFF_ARCH, OFF_ARG0 = 0, 4, 16


def _ins(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("<HBBI", code, jt, jf, k)


def program(machine: str | None = None) -> bytes | None:
    arch = machine or platform.machine()
    if arch not in SYSCALLS:
        return None
    nr = SYSCALLS[arch]
    eperm, enosys = RET_ERRNO | errno.EPERM, RET_ERRNO | errno.ENOSYS
    out = [
        _ins(LD_W_ABS, OFF_ARCH),
        _ins(JEQ_K, AUDIT_ARCH[arch], jt=1),
        _ins(RET_K, eperm),  # another ABI (32-bit compat) could dodge the checks below
        _ins(LD_W_ABS, OFF_NR),
    ]
    # unshare/clone: jump to the flag check (4 instructions from the end) when the number matches
    refused = [nr[name] for name in REFUSED]
    tail = len(refused) + 1 + 1  # refused checks, clone3 check, default allow
    out.append(_ins(JEQ_K, nr["unshare"], jt=1 + tail + 0))
    out.append(_ins(JEQ_K, nr["clone"], jt=tail))
    for index, number in enumerate(refused):
        # jump to the shared EPERM return after the allow: skip the remaining checks and the allow
        out.append(_ins(JEQ_K, number, jt=(len(refused) - index - 1) + 1 + 1 + 3))
    out.append(_ins(JEQ_K, nr["clone3"], jt=1 + 3 + 1))
    out.append(_ins(RET_K, RET_ALLOW))
    # flag check for unshare(flags) and clone(flags, ...): the low word of the first argument
    out.append(_ins(LD_W_ABS, OFF_ARG0))
    out.append(_ins(JSET_K, CLONE_NEWUSER, jt=1))
    out.append(_ins(RET_K, RET_ALLOW))
    out.append(_ins(RET_K, eperm))
    out.append(_ins(RET_K, enosys))
    return b"".join(out)
