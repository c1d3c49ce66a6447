"""The rig cgroup on this host's real cgroups (v1 or v2, whichever is detected)."""

from __future__ import annotations

import os
import secrets
import subprocess
import time

import pytest

from hangar.rigs.backends.enclosure.cgroups import CgroupV1, CgroupV2, detect, rig_cgroup

pytestmark = pytest.mark.needs_root


def test_limits_freeze_resident_and_kill() -> None:
    version, reason = detect()
    if version is None or os.geteuid() != 0:
        pytest.skip(f"no writable cgroups here: {reason or 'not root'}")
    group = rig_cgroup(version, f"test-{secrets.token_hex(4)}")
    group.create(256, 1)
    try:
        if isinstance(group, CgroupV1):
            assert (group.dirs["memory"] / "memory.limit_in_bytes").read_text().strip() == str(256 << 20)
            assert (group.dirs["cpu"] / "cpu.cfs_quota_us").read_text().strip() == "100000"
            assert (group.dirs["pids"] / "pids.max").read_text().strip() == "4096"
        else:
            assert isinstance(group, CgroupV2)
            assert (group.dir / "memory.max").read_text().strip() == str(256 << 20)
            assert (group.dir / "cpu.max").read_text().split() == ["100000", "100000"]
        files = " ".join(str(p) for p in group.procs_files())
        proc = subprocess.Popen(
            ["sh", "-c", f'for f in {files}; do echo $$ > "$f"; done; exec python3 -c "b = bytearray(48 << 20); '
             'import time; time.sleep(60)"'],
        )  # fmt: skip
        deadline = time.monotonic() + 10
        while group.resident_bytes() < 40 << 20 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert group.pids() == [proc.pid]
        assert group.resident_bytes() >= 40 << 20
        group.freeze()
        assert group.frozen()
        group.thaw()
        assert not group.frozen()
        group.kill_all()
        assert proc.wait(5) == -9
        assert group.pids() == []
    finally:
        group.kill_all()
        group.remove()


def test_a_process_killed_for_the_memory_limit_is_counted() -> None:
    """What a rig that lost a program (or died) says about it: the kernel's count of kills for the limit, none
    until a process goes over it."""
    version, reason = detect()
    if version is None or os.geteuid() != 0:
        pytest.skip(f"no writable cgroups here: {reason or 'not root'}")
    group = rig_cgroup(version, f"test-{secrets.token_hex(4)}")
    group.create(64, 1)
    files = " ".join(str(p) for p in group.procs_files())
    enter = f'for f in {files}; do echo $$ > "$f"; done; exec python3 -c'
    try:
        within = subprocess.run(["sh", "-c", f'{enter} "b = bytearray(16 << 20)"'], timeout=30)
        assert within.returncode == 0 and group.oom_kills() == 0
        over = subprocess.run(["sh", "-c", f'{enter} "b = bytearray(256 << 20)"'], timeout=30)
        assert over.returncode == -9 and group.oom_kills() == 1
    finally:
        group.kill_all()
        group.remove()
