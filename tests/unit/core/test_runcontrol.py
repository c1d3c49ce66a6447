"""The driver lock and stop requests beside it, against real files and a second real process."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from hangar.core.runcontrol import (
    LOCK_NAME,
    STOP_NAME,
    DrivenElsewhere,
    DriverLock,
    clear_stop,
    is_driven,
    request_stop,
    stop_requested,
)
from tests.support.locks import lock_held_elsewhere


def test_lock_is_exclusive_and_released(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    assert not is_driven(run_dir)
    lock = DriverLock.acquire(run_dir, "r1")
    assert is_driven(run_dir)
    assert DriverLock.try_acquire(run_dir) is None
    with pytest.raises(DrivenElsewhere) as err:
        DriverLock.acquire(run_dir, "r1")
    assert err.value.detail_code == "run_locked"
    lock.release()
    lock.release()
    assert not is_driven(run_dir)


def test_a_lock_held_by_another_process_is_seen_and_freed_when_it_dies(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    with lock_held_elsewhere(run_dir / LOCK_NAME):
        assert is_driven(run_dir)
    assert not is_driven(run_dir)


def test_stop_request_is_written_whole_and_cleared(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    assert not stop_requested(run_dir)
    at = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    request_stop(run_dir, "cli", at)
    assert stop_requested(run_dir)
    assert json.loads((run_dir / STOP_NAME).read_text()) == {"by": "cli", "at": "2026-01-02T03:04:05+00:00"}
    assert [p.name for p in run_dir.iterdir()] == [STOP_NAME]  # no temporary file left behind
    clear_stop(run_dir)
    clear_stop(run_dir)
    assert not stop_requested(run_dir)
