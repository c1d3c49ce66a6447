"""A worker's try of an agent step waits only so long for the earlier driver of its run to let go: past
``TAKE_OVER_WAIT_S`` it fails with a sentence saying so (the step's retries apply), and it takes the run as soon as
the lease is free. A run taken over whose reply an earlier driver posted is not run again: it ends ``ok``, its
output harvested from that reply."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from hangar.agents.bodies import on_worker
from hangar.agents.events import RunOutcome
from hangar.agents.runs import RunStatus
from hangar.agents.tools.builtin import OutputHolder
from hangar.core.runcontrol import Takeover
from hangar.errors import Unavailable


@dataclass
class FakeControl:
    free_after: int  # try_take answers None this many times first
    asked: int = 0
    released: list[str] = field(default_factory=list)

    async def try_take(self, run_id: str, *, workspace_id: str) -> Takeover | None:
        self.asked += 1
        return Takeover(False, 0) if self.asked > self.free_after else None

    def release(self, run_id: str) -> None:
        self.released.append(run_id)


@dataclass
class FakeStore:
    status: RunStatus

    async def get(self, workspace_id: str, run_id: str) -> Any:
        return FakeRun(run_id, self.status)


@dataclass
class FakeRun:
    id: str
    status: RunStatus


@dataclass
class FakeRunner:
    control: FakeControl
    store: FakeStore


@dataclass
class FakeStep:
    workspace_id: str = "ws"


async def test_a_lease_never_let_go_fails_the_try_past_the_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(on_worker, "TAKE_OVER_WAIT_S", 0.3)
    monkeypatch.setattr(on_worker, "TAKE_OVER_POLL_S", 0.05)
    runner = FakeRunner(FakeControl(free_after=10_000), FakeStore(RunStatus.running))
    with pytest.raises(Unavailable) as refused:
        await on_worker._take_over(FakeStep(), runner, FakeRun("r1", RunStatus.running))  # type: ignore[arg-type]
    assert refused.value.message == "agent run r1 is still driven by another process; the step is tried again"
    assert runner.control.asked > 1  # it kept asking until the wait ran out


async def test_a_lease_let_go_within_the_wait_is_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(on_worker, "TAKE_OVER_WAIT_S", 30.0)
    monkeypatch.setattr(on_worker, "TAKE_OVER_POLL_S", 0.01)
    # The run ended meanwhile (its earlier driver recorded it): taken, found over, let go, nothing driven.
    runner = FakeRunner(FakeControl(free_after=3), FakeStore(RunStatus.finished))
    await on_worker._take_over(FakeStep(), runner, FakeRun("r1", RunStatus.running))  # type: ignore[arg-type]
    assert runner.control.asked == 4 and runner.control.released == ["r1"]


@dataclass
class FakeIO:
    output: OutputHolder


SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


async def test_a_run_whose_reply_is_posted_ends_ok_without_running_again_and_its_output_is_harvested() -> None:
    io = FakeIO(OutputHolder(SCHEMA))
    done = await on_worker.AlreadyReplied('working\n{"n": 3}').run(None, io)  # type: ignore[arg-type]
    assert done.outcome is RunOutcome.ok
    assert (io.output.accepted, io.output.value) == (True, {"n": 3})


async def test_a_reply_without_a_valid_payload_submits_nothing() -> None:
    for reply in ("no json here", '{"n": "three"}'):
        io = FakeIO(OutputHolder(SCHEMA))
        done = await on_worker.AlreadyReplied(reply).run(None, io)  # type: ignore[arg-type]
        assert done.outcome is RunOutcome.ok and not io.output.accepted
    io = FakeIO(OutputHolder(None))  # no output asked for: the reply is the answer, nothing is submitted
    await on_worker.AlreadyReplied('{"n": 1}').run(None, io)  # type: ignore[arg-type]
    assert not io.output.accepted
