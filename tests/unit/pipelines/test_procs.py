"""Script groups a dead driver left running: killed by the next driver, unless the pid now names another process."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from hangar.pipelines.procs import GROUPS_DIR, is_alive, kill_orphaned_groups, record_group


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
