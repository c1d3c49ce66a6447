"""The ``RunIO`` of one live agent run: adapter reports become published turn events and space messages."""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from hangar.agents import events as ev
from hangar.agents.adapters.base import ToolResult
from hangar.agents.config import OpenAIAdapter
from hangar.agents.service import Agent
from hangar.agents.tools.builtin import OutputHolder, RunToolbox
from hangar.agents.tools.product import RunProductTools
from hangar.core.confine import Wait
from hangar.core.event_types import DomainEvent, StoredEvent
from hangar.core.metrics import Stopwatch
from hangar.workspace import Author, SpaceService

log = logging.getLogger(__name__)

# Tool results are kept in the event log only up to this many characters.
RESULT_CAP = 2000


@dataclass(frozen=True)
class _Job:
    """One queued report: an event to publish, or an action (posting a message), optionally awaited."""

    event: ev.RunEvent | None = None
    action: Callable[[], Awaitable[Any]] | None = None
    done: asyncio.Future[None] | None = None


class LiveRun:
    """``RunIO`` of one run: turns adapter reports into published events and space messages.

    Reports are queued and written in order by one task per run, so the adapter never waits for the database
    (the model request goes out while the run's start is being persisted). Text deltas that pile up while a
    write is in progress are merged into one event: the text is the same, with fewer writes when the database
    is busy. ``flush`` waits until everything queued is written.
    """

    def __init__(
        self,
        publish: Callable[[DomainEvent], Awaitable[StoredEvent]],
        spaces: SpaceService,
        workspace_id: str,
        run_id: str,
        agent: Agent,
        space_id: str,
        output: OutputHolder,
        product: RunProductTools | None = None,
        turn_timed: Callable[[float], None] | None = None,
    ) -> None:
        self._publish = publish
        self._turn_timed = turn_timed  # told each turn's length: the model's latency (``hangar_agent_model_seconds``)
        self._turn_clock = Stopwatch()
        self._spaces = spaces
        self._ws = workspace_id
        self.workspace_id = workspace_id
        self._ids = {"workspace_id": workspace_id, "run_id": run_id, "agent_id": agent.id, "space_id": space_id}
        self._author = Author("agent", agent.id, agent.name)
        self._space_id = space_id
        self._run_id = run_id
        self.output = output
        self.open_turn: int | None = None
        self.turns = 0
        self.first_seq: int | None = None
        tools = agent.adapter.tools if isinstance(agent.adapter, OpenAIAdapter) else ()
        self.toolbox = RunToolbox(
            enabled=tools,
            folder=spaces.folder(workspace_id, space_id),
            output=output,
            post=self._post_now,
            product=product,
        )
        self._queue: deque[_Job] = deque()
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._pump = asyncio.get_running_loop().create_task(self._drain(), name=f"agent-run-events:{run_id}")

    def _put(self, job: _Job) -> None:
        self._queue.append(job)
        self._idle.clear()
        self._wake.set()

    async def _drain(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._queue:
                job = self._queue.popleft()
                if isinstance(job.event, ev.TextDelta):
                    text = [job.event.text]
                    while self._queue and isinstance(nxt := self._queue[0].event, ev.TextDelta):
                        if nxt.turn != job.event.turn:
                            break
                        text.append(nxt.text)
                        self._queue.popleft()
                    if len(text) > 1:
                        job = _Job(event=job.event.model_copy(update={"text": "".join(text)}))
                try:
                    if job.event is not None:
                        stored = await self._publish(job.event)
                        if self.first_seq is None:
                            self.first_seq = stored.seq
                    elif job.action is not None:
                        await job.action()
                except Exception as exc:
                    log.exception("agent run %s: recording a report failed", self._run_id)
                    if job.done is not None and not job.done.done():
                        job.done.set_exception(exc)
                else:
                    if job.done is not None and not job.done.done():
                        job.done.set_result(None)
            self._idle.set()

    def _emit(self, event: ev.RunEvent) -> None:
        self._put(_Job(event=event))

    async def _post(self, content: str) -> None:
        await self._spaces.post(self._ws, self._space_id, self._author, content, run_id=self._run_id)

    def emit(self, event: ev.RunEvent) -> None:
        self._emit(event)

    def post_later(self, action: Callable[[], Awaitable[Any]]) -> None:
        self._put(_Job(action=action))

    async def _post_now(self, content: str) -> None:
        """Post in order with the run's other reports and wait for it (a tool's caller wants to know)."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._put(_Job(action=lambda: self._post(content), done=done))
        await done

    async def flush(self) -> None:
        await self._idle.wait()

    async def aclose(self) -> None:
        self._pump.cancel()
        await asyncio.gather(self._pump, return_exceptions=True)

    async def turn_started(self, turn: int) -> None:
        self.open_turn, self.turns = turn, turn
        self._turn_clock = Stopwatch()
        self._emit(ev.TurnStarted(**self._ids, turn=turn))

    async def waiting(self, turn: int, wait: Wait) -> None:
        self._emit(
            ev.TurnWaiting(
                **self._ids, turn=turn, text=wait.text, step=wait.step, steps=wait.steps, waiting=not wait.over
            )
        )

    async def reasoning_started(self, turn: int) -> None:
        self._emit(ev.ReasoningStarted(**self._ids, turn=turn))

    async def reasoning_finished(self, turn: int, text: str) -> None:
        self._emit(ev.ReasoningFinished(**self._ids, turn=turn, text=text))

    async def text_delta(self, turn: int, text: str) -> None:
        self._emit(ev.TextDelta(**self._ids, turn=turn, text=text))

    async def tool_started(self, turn: int, call_id: str, name: str, arguments: dict[str, Any]) -> None:
        self._emit(ev.ToolCallStarted(**self._ids, turn=turn, call_id=call_id, name=name, arguments=arguments))

    async def tool_finished(self, turn: int, call_id: str, name: str, result: ToolResult) -> None:
        capped = result.content[:RESULT_CAP]
        self._emit(ev.ToolCallFinished(**self._ids, turn=turn, call_id=call_id, name=name, ok=result.ok, result=capped))

    async def turn_finished(self, turn: int, outcome: ev.RunOutcome, error: str | None = None) -> None:
        self.open_turn = None
        if self._turn_timed is not None:
            self._turn_timed(self._turn_clock.seconds())
        self._emit(ev.TurnFinished(**self._ids, turn=turn, outcome=outcome, error=error))

    async def reply(self, turn: int, text: str) -> None:
        self.post_later(lambda: self._post(text))
