"""The seccomp program, run through a small classic-BPF interpreter for both architectures (only x86-64 runs
for real on this machine, in the enclosure escape tests)."""

from __future__ import annotations

import errno
import struct

import pytest

from hangar.rigs.backends.enclosure import seccomp

# the classic-BPF instructions libseccomp emits for these rules
LD_W_ABS, ALU_AND_K, JEQ_K, JGT_K, JGE_K, JSET_K, RET_K = 0x20, 0x54, 0x15, 0x25, 0x35, 0x45, 0x06
RET_ALLOW, RET_ERRNO = 0x7FFF0000, 0x00050000
# syscall numbers per architecture, written out from the kernel's tables so the check does not trust libseccomp's
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
X32_SYSCALL_BIT = 0x40000000


def run(program: bytes, nr: int, arch: int, arg0: int = 0) -> int:
    data = struct.pack("<iIQ", nr - (1 << 32) if nr >= 1 << 31 else nr, arch, 0) + struct.pack("<Q", arg0)
    data += b"\0" * 40
    insns = [struct.unpack("<HBBI", program[i : i + 8]) for i in range(0, len(program), 8)]
    acc, pc = 0, 0
    while True:
        code, jt, jf, k = insns[pc]
        if code == LD_W_ABS:
            acc = struct.unpack("<I", data[k : k + 4])[0]
        elif code == ALU_AND_K:
            acc &= k
        elif code in (JEQ_K, JGT_K, JGE_K, JSET_K):
            taken = {JEQ_K: acc == k, JGT_K: acc > k, JGE_K: acc >= k, JSET_K: bool(acc & k)}[code]
            pc += jt if taken else jf
        elif code == RET_K:
            return k
        else:
            raise AssertionError(f"unexpected instruction {code:#x}")
        pc += 1


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_program_decisions(machine: str) -> None:
    program = seccomp.program(machine)
    assert program is not None
    arch, nr = seccomp.AUDIT_ARCH[machine], SYSCALLS[machine]
    allow, eperm = RET_ALLOW, RET_ERRNO | errno.EPERM
    assert run(program, nr["unshare"], arch, seccomp.CLONE_NEWUSER) == eperm
    assert run(program, nr["unshare"], arch, 0x00020000) == allow  # a mount namespace alone: no privilege anyway
    assert run(program, nr["clone"], arch, seccomp.CLONE_NEWUSER | 0x11) == eperm
    assert run(program, nr["clone"], arch, 0x01200011) == allow  # what fork() passes
    assert run(program, nr["clone3"], arch) == RET_ERRNO | errno.ENOSYS
    for name in seccomp.REFUSED:
        assert run(program, nr[name], arch) == eperm, name
    assert run(program, 0, arch) == allow  # read (x86-64) / io_setup (arm64): everything else passes
    assert run(program, 63, arch) == allow
    assert run(program, nr["unshare"], 0x40000003) == eperm  # another ABI is refused outright


def test_x32_numbers_are_refused_on_x86_64() -> None:
    # x32 calls carry x86-64's audit architecture with bit 30 set in the number: without a check they would
    # dodge every rule keyed on the plain number
    program = seccomp.program("x86_64")
    assert program is not None
    nr = SYSCALLS["x86_64"]
    assert run(program, X32_SYSCALL_BIT | nr["unshare"], seccomp.AUDIT_ARCH["x86_64"], 0) == RET_ERRNO | errno.EPERM


def test_unknown_architecture_gets_no_filter() -> None:
    assert seccomp.program("riscv64") is None
