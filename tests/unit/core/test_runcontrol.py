"""Run control across processes: the driver lock and stop requests beside it, against real files and a second real
process; taking over a run a dead driver left; the stop watch and a stop that waits for another driver."""

from __future__ import annotations

import asyncio
import errno
import json
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from hangar.core.procs import record_group
from hangar.core.runcontrol import (
    LOCK_NAME,
    STOP_NAME,
    DrivenElsewhere,
    DriverLock,
    RunControl,
    clear_stop,
    is_driven,
    request_stop,
    stop_requested,
)
from hangar.errors import InvalidArgs, Unavailable
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


AT = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


async def test_taking_a_run_is_exclusive_names_its_kind_and_refuses_a_path_out(tmp_path: Path) -> None:
    control = RunControl(tmp_path, kind="pipeline run", on_stop=lambda _r: True)
    took = await control.take("r1")
    assert took.stop_requested is False and took.killed == 0
    assert control.holds("r1") and is_driven(tmp_path / "r1")
    assert await control.try_take("r1") is None  # held here: a second driver in this process is refused too
    with pytest.raises(DrivenElsewhere) as err:
        await control.take("r1")
    assert err.value.message == "pipeline run r1 is being driven by another process"
    with pytest.raises(InvalidArgs):
        control.control_dir("..")
    control.release("r1")
    control.release("r1")
    assert not control.holds("r1") and not is_driven(tmp_path / "r1")
    control.remove("r1")
    assert not (tmp_path / "r1").exists()
    await control.aclose()


async def test_taking_over_kills_what_the_dead_driver_left_and_reports_its_stop_request(tmp_path: Path) -> None:
    control = RunControl(tmp_path, kind="agent run", on_stop=lambda _r: True)
    orphan = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        control.control_dir("r1").mkdir()
        record_group(control.control_dir("r1"), "job", orphan.pid)
        request_stop(control.control_dir("r1"), "cli", AT)
        with lock_held_elsewhere(tmp_path / "r1" / LOCK_NAME):
            assert await control.try_take("r1") is None  # its driver is alive: nothing is touched
            assert orphan.poll() is None
        took = await control.take("r1")
        assert took.stop_requested and took.killed == 1
        assert orphan.wait(5) == -9
    finally:
        orphan.kill()
        orphan.wait()
        await control.aclose()


async def test_stop_requests_written_later_reach_on_stop_until_it_has_them_in_hand(tmp_path: Path) -> None:
    seen: list[str] = []
    ready = {"r1": False}

    def on_stop(run_id: str) -> bool:
        seen.append(run_id)
        return ready[run_id]

    control = RunControl(tmp_path, kind="run", on_stop=on_stop)
    await control.take("r1")
    request_stop(control.control_dir("r1"), "elsewhere", AT)
    async with asyncio.timeout(5):
        while len(seen) < 2:  # not in hand yet: offered again
            await asyncio.sleep(0.01)
        ready["r1"] = True
        while seen.count("r1") < 3:
            await asyncio.sleep(0.01)
    offered = len(seen)
    await asyncio.sleep(0.2)
    assert len(seen) == offered  # in hand: never offered again
    control.release("r1")
    async with asyncio.timeout(5):  # with nothing held the watch ends by itself
        while control._watch is not None and not control._watch.done():
            await asyncio.sleep(0.01)
    await control.aclose()


async def test_a_stop_is_recorded_then_carried_out_here_or_awaited(tmp_path: Path) -> None:
    control = RunControl(tmp_path, kind="agent run", on_stop=lambda _r: True)
    tries: list[int] = []

    async def stop_here() -> bool:
        tries.append(1)
        return len(tries) >= 3  # the driver elsewhere died after two looks: this process ends the run

    async def never_ends() -> bool:
        return False

    await control.stop("r1", by="cli", at=AT, stop_here=stop_here, ended=never_ends)
    assert len(tries) == 3
    assert json.loads((tmp_path / "r1" / STOP_NAME).read_text()) == {"by": "cli", "at": AT.isoformat()}

    async def elsewhere() -> bool:
        return False

    looks: list[int] = []

    async def ends_at_the_second_look() -> bool:
        looks.append(1)
        return len(looks) == 2

    await control.stop("r2", by="cli", at=AT, stop_here=elsewhere, ended=ends_at_the_second_look)
    assert len(looks) == 2

    with pytest.raises(Unavailable) as err:
        await control.stop("r3", by="cli", at=AT, stop_here=elsewhere, ended=never_ends, wait_s=0.1)
    assert err.value.detail_code == "stop_pending" and "agent run r3" in err.value.message
    assert stop_requested(tmp_path / "r3")  # the request stands


def test_a_symbolic_link_planted_as_the_run_lock_is_refused_not_followed(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    elsewhere = tmp_path / "elsewhere"
    (run_dir / LOCK_NAME).symlink_to(elsewhere)
    with pytest.raises(OSError) as err:
        DriverLock.try_acquire(run_dir)
    assert err.value.errno == errno.ELOOP and not elsewhere.exists()
