"""Process identity: which process owns a run (a live process is alive; a dead one, a reused pid or an unreaped
zombie is not), and script groups a dead driver left running, killed by the next driver unless the pid now names
another process."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from hangar.core.procs import GROUPS_DIR, is_alive, kill_orphaned_groups, record_group, start_ticks, this_process


def test_recorded_groups_are_killed_and_a_reused_pid_is_left_alone(tmp_path: Path) -> None:
    assert kill_orphaned_groups(tmp_path) == 0  # nothing recorded
    orphan = subprocess.Popen(["bash", "-c", "sleep 60 & wait"], start_new_session=True)
    bystander = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        recorded = record_group(tmp_path, "orphan", orphan.pid)
        owner = recorded.read_text()
        assert is_alive(owner)
        # The same pid with another start time: a process that merely got a dead script's pid.
        (tmp_path / GROUPS_DIR / "reused").write_text(f"{bystander.pid}:1")
        assert kill_orphaned_groups(tmp_path) == 1
        assert orphan.wait(5) == -9
        deadline = time.monotonic() + 5
        while is_alive(owner):
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert bystander.poll() is None
        assert list((tmp_path / GROUPS_DIR).iterdir()) == []
    finally:
        for proc in (orphan, bystander):
            proc.kill()
            proc.wait()


def test_live_dead_reused_and_zombie_owners() -> None:
    assert is_alive(this_process())
    assert not is_alive(None) and not is_alive("") and not is_alive("not-a-pid:1")
    assert not is_alive("999999999:1")
    child = subprocess.Popen(["sleep", "60"])
    try:
        owner = f"{child.pid}:{start_ticks(child.pid)}"
        assert is_alive(owner)
        assert not is_alive(f"{child.pid}:1")  # the same pid, another process's start time
        os.kill(child.pid, signal.SIGKILL)
        deadline = time.monotonic() + 5
        while is_alive(owner):  # killed and not reaped yet: a zombie counts as gone
            assert time.monotonic() < deadline, "a killed, unreaped process still counts as alive"
            time.sleep(0.01)
    finally:
        child.kill()
        child.wait()
