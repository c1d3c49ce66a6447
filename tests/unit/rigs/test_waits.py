"""A job's wait relayed to its caller (``WaitRelay``), and a caller joining a pack build under way (``PackBuilds``)."""

from __future__ import annotations

import asyncio
import logging

import pytest

from hangar.core.confine import Wait
from hangar.rigs.confinement.waits import WaitRelay
from hangar.rigs.images.packs import PackBuilds


async def test_each_new_step_is_delivered_once_in_order_with_its_count_then_the_end() -> None:
    heard: list[Wait] = []

    async def on_wait(wait: Wait) -> None:
        await asyncio.sleep(0)  # a listener that awaits (it writes to a database) does not reorder anything
        heard.append(wait)

    relay = WaitRelay("agentRun:r1", on_wait, grace_s=0)
    for text in ("starting the enclosure", "terminal image: preparing (1/10)", "terminal image: preparing (1/10)",
                 "  terminal image:\ndownloading packages (4/10) ", "rig ready"):  # fmt: skip
        relay(text)
    await relay.finish("the enclosure is up")
    assert heard == [
        Wait("starting the enclosure"),
        Wait("terminal image: preparing (1/10)", 1, 10),
        Wait("terminal image: downloading packages (4/10)", 4, 10),
        Wait("rig ready"),
        Wait("the enclosure is up", over=True),
    ]


async def test_a_job_that_never_waited_hears_nothing_and_a_failing_listener_fails_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    heard: list[Wait] = []

    async def on_wait(wait: Wait) -> None:
        heard.append(wait)

    quiet = WaitRelay("pipelineRun:p1", on_wait, grace_s=0)
    await quiet.finish("the enclosure is up")
    assert heard == []

    # A wait over within the grace (a warm boot) is not told: no event, no line in the log.
    with caplog.at_level(logging.INFO, logger="hangar.rigs.confinement.waits"):
        quick = WaitRelay("agentRun:r2", on_wait, grace_s=60)
        quick("starting the enclosure")
        quick("rig ready")
        await quick.finish("the enclosure is up")
    assert heard == [] and not caplog.records

    async def broken(_wait: Wait) -> None:
        raise RuntimeError("the database is gone")

    relay = WaitRelay("pipelineRun:p2", broken, grace_s=0)
    relay("starting the enclosure")
    relay("rig ready")
    with caplog.at_level(logging.INFO, logger="hangar.rigs.confinement.waits"):
        await relay.finish("the enclosure is up")  # returns: every report was tried
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR] == [
        "pipelineRun:p2: reporting what it waits for failed"
    ] * 3  # the two steps and the end


async def test_a_caller_joining_a_build_hears_the_current_step_at_once() -> None:
    builds = PackBuilds()
    step_reached, release = asyncio.Event(), asyncio.Event()

    async def build(progress: object) -> None:
        assert callable(progress)
        progress("terminal image: downloading packages (4/10)")
        step_reached.set()
        await release.wait()
        progress("terminal image ready")

    first: list[str] = []
    joined: list[str] = []
    starter = asyncio.create_task(builds.run("terminal", build, first.append))
    await step_reached.wait()
    joiner = asyncio.create_task(builds.run("terminal", build, joined.append))
    await asyncio.sleep(0)
    assert joined == ["terminal image: downloading packages (4/10)"]  # not silent until the next step
    release.set()
    await asyncio.gather(starter, joiner)
    assert first == ["terminal image: downloading packages (4/10)", "terminal image ready"]
    assert joined == first
