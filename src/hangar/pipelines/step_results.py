"""What a body returns: ``StepResult`` and its factories, one per row of the spec's step-result table.

Every factory except ``failed`` accepts ``mutated_state``, merged into the run's state. ``output`` is the value
the engine writes under the step's ``outputKey`` (through the node's reducer, after checking ``outputSchema``);
a body that produces nothing for ``outputKey`` leaves it unset.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

ResultKind = Literal["ok", "route", "suspendUntilEvent", "suspendUntilTasksComplete", "terminal", "failed"]


class _Missing:
    """The absence of an output (``None`` is a legitimate output)."""

    _instance: _Missing | None = None

    def __new__(cls) -> _Missing:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NO_OUTPUT"

    def __bool__(self) -> bool:
        return False


NO_OUTPUT: Any = _Missing()


@dataclass(frozen=True)
class StepResult:
    kind: ResultKind
    mutated_state: Mapping[str, Any] | None = None
    output: Any = NO_OUTPUT
    route_key: str | None = None
    event_type: str | None = None
    event_match: Mapping[str, Any] | None = None
    task_ids: tuple[str, ...] = field(default=())
    error: str | None = None

    @property
    def has_output(self) -> bool:
        return self.output is not NO_OUTPUT

    @property
    def suspends(self) -> bool:
        return self.kind in ("suspendUntilEvent", "suspendUntilTasksComplete")

    @classmethod
    def ok(cls, mutated_state: Mapping[str, Any] | None = None, *, output: Any = NO_OUTPUT) -> StepResult:
        """Normal completion; downstream listeners are evaluated."""
        return cls("ok", mutated_state, output)

    @classmethod
    def route(
        cls, next_router_key: str, mutated_state: Mapping[str, Any] | None = None, *, output: Any = NO_OUTPUT
    ) -> StepResult:
        """Router completion: only the edge whose ``routeKey`` equals ``next_router_key`` fires."""
        if not isinstance(next_router_key, str) or not next_router_key:
            raise ValueError("a route key must be a non-empty string")
        return cls("route", mutated_state, output, route_key=next_router_key)

    @classmethod
    def suspend_until_event(
        cls,
        event_type: str,
        mutated_state: Mapping[str, Any] | None = None,
        *,
        match: Mapping[str, Any] | None = None,
    ) -> StepResult:
        """Pause until a domain event of ``event_type`` fires (whose payload contains ``match``, when given)."""
        if not event_type:
            raise ValueError("suspendUntilEvent needs an event type")
        return cls("suspendUntilEvent", mutated_state, event_type=event_type, event_match=match)

    @classmethod
    def suspend_until_tasks_complete(
        cls, task_ids: Iterable[str], mutated_state: Mapping[str, Any] | None = None
    ) -> StepResult:
        """Pause until every listed task has finished (reported with the ``TaskFinished`` event)."""
        ids = tuple(dict.fromkeys(str(t) for t in task_ids))
        if not ids:
            raise ValueError("suspendUntilTasksComplete needs at least one task id")
        return cls("suspendUntilTasksComplete", mutated_state, task_ids=ids)

    @classmethod
    def terminal(cls, mutated_state: Mapping[str, Any] | None = None, *, output: Any = NO_OUTPUT) -> StepResult:
        """The run is finished."""
        return cls("terminal", mutated_state, output)

    @classmethod
    def failed(cls, error_message: str) -> StepResult:
        """The step failed (retried while its ``retryPolicy`` has attempts left)."""
        return cls("failed", error=error_message or "the step failed")
