"""The core parts plus a test part whose ops exercise every error code and the guardrails."""

from __future__ import annotations

import asyncio

from pydantic import Field

from hangar.core.event_types import DomainEvent
from hangar.core.part import Part
from hangar.errors import Unavailable
from hangar.identity.part import IDENTITY_PART
from hangar.oversight import OVERSIGHT_PART
from hangar.rpc.context import OpContext
from hangar.rpc.registry import Args, Done, NoArgs, Result, op


class SpawnArgs(Args):
    space_id: str | None = None
    command: str = Field(min_length=1)
    count: int = 1


class Spawned(Result):
    ran: str
    count: int


@op("test.spawn", kind="mutate", scope="workspace", actions=["processSpawn"])
async def test_spawn(ctx: OpContext, args: SpawnArgs) -> Spawned:
    """An op declaring an action class, to exercise guardrails."""
    return Spawned(ran=args.command, count=args.count)


@op("test.down", kind="read", scope="server")
async def test_down(ctx: OpContext, args: NoArgs) -> Done:
    """Always unavailable."""
    raise Unavailable("the test backend is down")


@op("test.crash", kind="read", scope="server")
async def test_crash(ctx: OpContext, args: NoArgs) -> Done:
    """Always crashes with a secret in the exception text, which must not reach the caller."""
    raise RuntimeError("secret-value-123")


class SlowArgs(Args):
    seconds: float = Field(default=2.2, gt=0, le=10)


@op("test.slow", kind="read", scope="server")
async def test_slow(ctx: OpContext, args: SlowArgs) -> Done:
    """Takes its time, saying how it goes half way, to exercise progress."""
    await asyncio.sleep(args.seconds / 2)
    await ctx.report("half way")
    await asyncio.sleep(args.seconds / 2)
    return Done()


_LEFT_BEHIND: set[asyncio.Task[int]] = set()


@op("test.later", kind="mutate", scope="workspace")
async def test_later(ctx: OpContext, args: NoArgs) -> Done:
    """Writes an audit row itself, one from a task it awaits, and leaves a task that writes one after it answered."""
    await ctx.audit("test.now", "test:later")
    await asyncio.create_task(ctx.audit("test.within", "test:later"))
    task = asyncio.create_task(ctx.audit("test.after", "test:later"))  # runs once the call has answered
    _LEFT_BEHIND.add(task)
    task.add_done_callback(_LEFT_BEHIND.discard)
    return Done()


class Noted(DomainEvent):
    type = "test.noted"
    text: str


class Pinged(DomainEvent):
    type = "test.pinged"
    n: int


TEST_PART = Part(name="test", ops=[test_spawn, test_down, test_crash, test_slow, test_later], events=[Noted, Pinged])
PARTS = [OVERSIGHT_PART, IDENTITY_PART, TEST_PART]
