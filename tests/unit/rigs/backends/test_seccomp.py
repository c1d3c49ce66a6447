"""The seccomp program, run through a small classic-BPF interpreter for both architectures (only x86-64 runs
for real on this machine, in the enclosure escape tests)."""

from __future__ import annotations

import errno
import struct

import pytest

from hangar.rigs.backends.enclosure import seccomp


def run(program: bytes, nr: int, arch: int, arg0: int = 0) -> int:
    data = struct.pack("<iIQ", nr, arch, 0) + struct.pack("<Q", arg0) + b"\0" * 40
    insns = [struct.unpack("<HBBI", program[i : i + 8]) for i in range(0, len(program), 8)]
    acc, pc = 0, 0
    while True:
        code, jt, jf, k = insns[pc]
        if code == seccomp.LD_W_ABS:
            acc = struct.unpack("<I", data[k : k + 4])[0]
        elif code == seccomp.JEQ_K:
            pc += jt if acc == k else jf
        elif code == seccomp.JSET_K:
            pc += jt if acc & k else jf
        elif code == seccomp.RET_K:
            return k
        else:
            raise AssertionError(f"unexpected instruction {code:#x}")
        pc += 1


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_program_decisions(machine: str) -> None:
    program = seccomp.program(machine)
    assert program is not None
    arch, nr = seccomp.AUDIT_ARCH[machine], seccomp.SYSCALLS[machine]
    allow, eperm = seccomp.RET_ALLOW, seccomp.RET_ERRNO | errno.EPERM
    assert run(program, nr["unshare"], arch, seccomp.CLONE_NEWUSER) == eperm
    assert run(program, nr["unshare"], arch, 0x00020000) == allow  # a mount namespace alone: no privilege anyway
    assert run(program, nr["clone"], arch, seccomp.CLONE_NEWUSER | 0x11) == eperm
    assert run(program, nr["clone"], arch, 0x01200011) == allow  # what fork() passes
    assert run(program, nr["clone3"], arch) == seccomp.RET_ERRNO | errno.ENOSYS
    for name in seccomp.REFUSED:
        assert run(program, nr[name], arch) == eperm, name
    assert run(program, 0, arch) == allow  # read (x86-64) / io_setup (arm64): everything else passes
    assert run(program, 63, arch) == allow
    assert run(program, nr["unshare"], 0x40000003) == eperm  # another ABI is refused outright


def test_unknown_architecture_gets_no_filter() -> None:
    assert seccomp.program("riscv64") is None
