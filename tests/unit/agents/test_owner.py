"""Which process owns a run: a live process is alive, a dead one, a reused pid or an unreaped zombie is not."""

from __future__ import annotations

import os
import signal
import subprocess
import time

from hangar.agents.owner import is_alive, start_ticks, this_process


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
