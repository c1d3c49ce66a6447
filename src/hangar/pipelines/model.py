"""The pipeline template model: steps, their kinds, per-node configuration, edges; run and step statuses.

The wire format (JSON or YAML) is fixed by CONTRACTS §5: camelCase keys, ``config`` holding the per-node
configuration fields of the spec. Models refuse unknown keys so that a typo in a template is an error naming
the key instead of a silently ignored setting. Cross-step rules (one trigger, known ids, no cycles...) live in
``template.py``; these models only check the shape of each piece.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel


class StepKind(StrEnum):
    trigger = "trigger"
    listen = "listen"
    join = "join"  # type: ignore[assignment]  # str.join is shadowed on purpose: the wire name
    router = "router"
    forEach = "forEach"
    terminal = "terminal"


class RunStatus(StrEnum):
    running = "running"
    suspended = "suspended"
    completed = "completed"
    failed = "failed"
    cancelled = "cancelled"


class StepStatus(StrEnum):
    pending = "pending"
    running = "running"
    suspended = "suspended"
    completed = "completed"
    failed = "failed"
    skipped = "skipped"
    timedOut = "timedOut"
    cancelled = "cancelled"


FINISHED_RUN: frozenset[RunStatus] = frozenset({RunStatus.completed, RunStatus.failed, RunStatus.cancelled})
TERMINAL_STEP: frozenset[StepStatus] = frozenset(
    {StepStatus.completed, StepStatus.failed, StepStatus.skipped, StepStatus.timedOut, StepStatus.cancelled}
)

REDUCERS: tuple[str, ...] = ("append", "mergeLists", "mergeMaps", "sum", "override")
Reducer = Literal["append", "mergeLists", "mergeMaps", "sum", "override"]

# Bodies of these kinds are never looked up in the body registry: they do no work of their own.
BODYLESS_KINDS: frozenset[StepKind] = frozenset({StepKind.terminal})
TRIGGER_BODY = "pipeline.trigger"


class _Wire(BaseModel):
    model_config = ConfigDict(
        extra="forbid", populate_by_name=True, alias_generator=to_camel, frozen=True, use_enum_values=False
    )


class RetryPolicy(_Wire):
    max_attempts: int
    backoff: Literal["linear", "exponential"] = "exponential"
    initial_delay_ms: int = Field(default=0, ge=0)

    @field_validator("max_attempts")
    @classmethod
    def _at_least_one(cls, v: int) -> int:
        if v < 1:
            raise ValueError(f"maxAttempts must be at least 1, not {v}")
        return v

    def delay_ms(self, retry_number: int) -> int:
        """Delay before retry number ``retry_number`` (1 = the first retry, after the first attempt failed)."""
        if retry_number < 1:
            return 0
        if self.backoff == "linear":
            return self.initial_delay_ms * retry_number
        return int(self.initial_delay_ms * (2 ** (retry_number - 1)))


class NodeConfig(_Wire):
    """``PipelineNodeConfig``: every field of the spec; ``extras`` is free-form and body-specific."""

    prompt: str | None = None
    script: str | None = None
    agent_id: str | None = None
    input_keys: tuple[str, ...] = ()
    repo_ids: tuple[str, ...] = ()
    output_key: str | None = None
    label: str | None = None
    output_schema: dict[str, Any] | None = None
    reducer: Reducer | None = None
    retry_policy: RetryPolicy | None = None
    continue_on_fail: bool = False
    timeout_ms: int | None = Field(default=None, gt=0)
    team_id: str | None = None
    dispatch_mode: Literal["allParallel", "manager"] | None = None
    extras: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _agent_or_team(self) -> NodeConfig:
        if self.agent_id and self.team_id:
            raise ValueError("agentId and teamId are mutually exclusive")
        return self

    # Derived accessors named by the spec.
    @property
    def space_id(self) -> str | None:
        v = self.extras.get("spaceId")
        return str(v) if v is not None else None

    @property
    def creates_conversation(self) -> bool:
        return bool(self.extras.get("createConversation", False))

    @property
    def conversation_title(self) -> str | None:
        v = self.extras.get("conversationTitle")
        return str(v) if v is not None else None

    @property
    def mode_name(self) -> str | None:
        v = self.extras.get("mode")
        return str(v) if v is not None else None

    @property
    def run_when(self) -> Any:
        return self.extras.get("runWhen")

    @property
    def await_approval(self) -> bool:
        """Exempts a suspended step from the 24-hour timeout (set only by approval-style bodies)."""
        return bool(self.extras.get("awaitApproval", False))

    @property
    def effective_reducer(self) -> Reducer:
        return self.reducer or "override"


class StepTrigger(_Wire):
    source_step_ids: tuple[str, ...] = ()


class StepDef(_Wire):
    id: str = Field(min_length=1, max_length=128)
    kind: StepKind
    body: str | None = None
    trigger: StepTrigger | None = None
    wait_for_step_ids: tuple[str, ...] = ()
    config: NodeConfig = Field(default_factory=NodeConfig)

    @property
    def label(self) -> str:
        return self.config.label or self.id

    @property
    def source_ids(self) -> tuple[str, ...]:
        return self.trigger.source_step_ids if self.trigger is not None else ()

    @property
    def body_key(self) -> str | None:
        """The body that executes this step: the trigger's is always the no-op trigger body."""
        if self.kind is StepKind.terminal:
            return None
        if self.kind is StepKind.trigger:
            return self.body or TRIGGER_BODY
        return self.body


class Edge(_Wire):
    from_: str = Field(alias="from")
    to: str
    route_key: str | None = None


class Template(_Wire):
    id: str = Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    name: str = ""
    description: str = ""
    steps: tuple[StepDef, ...]
    edges: tuple[Edge, ...] = ()

    @property
    def display_name(self) -> str:
        return self.name or self.id

    def step(self, step_id: str) -> StepDef:
        for s in self.steps:
            if s.id == step_id:
                return s
        raise KeyError(step_id)

    def to_wire(self) -> dict[str, Any]:
        """The template as stored and returned: camelCase, defaults left out."""
        return self.model_dump(mode="json", by_alias=True, exclude_defaults=True)
