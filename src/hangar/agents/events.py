"""Typed turn events of agent runs, published on the bus (persisted with a sequence number) so the chat
bridge, space watchers and pipelines follow a run live and can replay it afterwards.

A run is a sequence of turns; a turn is one model round trip (or one command execution): the request, the
streamed reply (reasoning, text, tool calls), and the tool results fed back for the next turn. Every event names
its run, agent, space and turn number. ``TurnFinished.outcome`` is ``ok``, ``failed``, ``interrupted`` or
``turnLimit``; ``RunFinished.outcome`` is the outcome of the run's last turn.

A turn that runs a program (a command agent's) may wait before the program starts: ``TurnWaiting`` says for what,
step by step (the terminal image's build, the enclosure's boot), and its last one has ``waiting`` false.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from hangar.core.event_types import DomainEvent


class RunOutcome(StrEnum):
    """How a turn, and so a run, ended."""

    ok = "ok"
    failed = "failed"
    interrupted = "interrupted"
    turn_limit = "turnLimit"


class RunEvent(DomainEvent):
    """Fields every run event carries (this class itself is never published)."""

    type = "agents.runEvent"
    run_id: str
    agent_id: str
    space_id: str


class RunStarted(RunEvent):
    type = "agents.runStarted"
    dispatched_by: str


class TurnStarted(RunEvent):
    type = "agents.turnStarted"
    turn: int


class TurnWaiting(RunEvent):
    """The turn waits before its program can start: ``text`` says for what ("terminal image: downloading packages
    (4/10)", "starting the enclosure"), ``step`` of ``steps`` when the wait counts its steps (else 0 of 0). The
    last event of a wait has ``waiting`` false: the program starts."""

    type = "agents.turnWaiting"
    turn: int
    text: str
    step: int = 0
    steps: int = 0
    waiting: bool = True


class ReasoningStarted(RunEvent):
    type = "agents.reasoningStarted"
    turn: int


class ReasoningFinished(RunEvent):
    """The turn's reasoning prose, sent once when it is complete."""

    type = "agents.reasoningFinished"
    turn: int
    text: str


class ToolCallStarted(RunEvent):
    type = "agents.toolCallStarted"
    turn: int
    call_id: str
    name: str
    arguments: dict[str, Any]


class ToolCallFinished(RunEvent):
    """A tool call's end; ``result`` is the (capped) text fed back to the model."""

    type = "agents.toolCallFinished"
    turn: int
    call_id: str
    name: str
    ok: bool
    result: str


class TextDelta(RunEvent):
    type = "agents.textDelta"
    turn: int
    text: str


class TurnFinished(RunEvent):
    type = "agents.turnFinished"
    turn: int
    outcome: RunOutcome
    error: str | None = None


class RunFinished(RunEvent):
    type = "agents.runFinished"
    outcome: RunOutcome
    error: str | None = None
    has_output: bool = False


AGENT_EVENTS: tuple[type[DomainEvent], ...] = (
    RunStarted,
    TurnStarted,
    TurnWaiting,
    ReasoningStarted,
    ReasoningFinished,
    ToolCallStarted,
    ToolCallFinished,
    TextDelta,
    TurnFinished,
    RunFinished,
)
RUN_EVENT_TYPES: tuple[str, ...] = tuple(cls.type for cls in AGENT_EVENTS)
