"""What a body is given: ``StepContext``.

A body reads the run (ids, dry-run flag, trigger payload), a read-only view of the state, its node config and
the clock; it writes nothing directly: it returns a ``StepResult`` whose ``mutated_state`` and ``output`` the
engine persists. The only side channel is ``progress``, which the engine stores in the step-run row.

Bodies run at least once: after a crash (kill -9 included) a step that was running is run again, so a body
with side effects must be idempotent or tolerate a repeat (see the README, "At-least-once bodies").
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from hangar.core.clock import Clock
from hangar.errors import InvalidArgs, Unavailable
from hangar.pipelines import substitute
from hangar.pipelines.filecheck import Folders
from hangar.pipelines.model import NodeConfig, StepDef, StepKind

if TYPE_CHECKING:
    from hangar.core.context import AppContext

T = TypeVar("T")


# A body waiting for a decision an agent makes in a conversation reports ``{APPROVAL_PROGRESS_KEY: {agentId,
# spaceId, outputSchema}}`` in its progress; the run's step detail shows it typed (``ApprovalWait``), so a client
# can send the person's decision to that agent in that space.
APPROVAL_PROGRESS_KEY = "approval"
# An agent step's ``extras`` flag: its agents read the space's folder and cannot change it (the agents part
# enforces it; a template maker, the forges part's review template, sets it).
READ_ONLY_WORKTREE = "readOnlyWorktree"


def extra_count(extras: Mapping[str, Any], name: str, default: int, ceiling: int) -> int:
    """A whole-number limit a body reads from its node's ``extras`` (``default`` when absent), from 1 to
    ``ceiling``; anything else is refused naming the extra."""
    value = extras.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= ceiling:
        raise InvalidArgs(f"extras.{name} must be a whole number from 1 to {ceiling}, not {value!r}", field=name)
    return value


def run_key(run_id: str) -> str:
    """What a pipeline run's effects in other parts are signed and keyed with (``pipeline:<runId>``)."""
    return f"pipeline:{run_id}"


def attempt_keys_prefix(run_id: str) -> str:
    """Every ``StepContext.attempt_key`` of the run's steps starts with this (to find all their effects)."""
    return f"{run_key(run_id)}/"


def _attempt_key(run_id: str, step_id: str, attempt: int) -> str:
    return f"{attempt_keys_prefix(run_id)}{step_id}#{attempt}"


@dataclass(frozen=True)
class ResumedEvent:
    """The domain event that resumed a step suspended with ``suspendUntilEvent``."""

    type: str
    seq: int
    payload: Mapping[str, Any]


@dataclass(frozen=True)
class TaskOutcome:
    """How one task a step waited for finished (from its ``TaskFinished`` event)."""

    task_id: str
    outcome: str
    output: Any = None

    @property
    def succeeded(self) -> bool:
        return self.outcome in SUCCESS_OUTCOMES


SUCCESS_OUTCOMES: frozenset[str] = frozenset({"completed", "succeeded", "ok", "success"})


@dataclass(frozen=True)
class Resume:
    """Why a suspended step is being completed: the event, or the finished tasks (in the order asked for)."""

    event: ResumedEvent | None = None
    tasks: tuple[TaskOutcome, ...] = field(default=())


class ChildRuns(Protocol):
    """Lets a body start another template as a child run (the sub-pipeline body)."""

    async def start_child(self, template_id: str, payload: Mapping[str, Any]) -> str:
        """Start ``template_id`` in this workspace with ``parentPipelineRunId`` set; returns the child run id."""
        ...


ProgressSink = Callable[[Mapping[str, Any]], Awaitable[None]]


class StepContext:
    """One attempt of one step. Built by the engine; bodies only read it."""

    def __init__(
        self,
        *,
        app: AppContext | None,
        run_id: str,
        workspace_id: str,
        template_id: str,
        parent_run_id: str | None,
        dry_run: bool,
        payload: Mapping[str, Any],
        state: Mapping[str, Any],
        step: StepDef,
        attempt: int,
        clock: Clock,
        run_dir: Path,
        progress: ProgressSink,
        control_dir: Path | None = None,
        folders: Folders | None = None,
        children: ChildRuns | None = None,
        resume: Resume | None = None,
        try_key: str | None = None,
        earlier_tries: Sequence[Mapping[str, Any]] = (),
        on_worker: bool = False,
    ) -> None:
        self._app = app
        self.run_id = run_id
        self.workspace_id = workspace_id
        self.template_id = template_id
        self.parent_run_id = parent_run_id
        self.dry_run = dry_run
        self.payload: Mapping[str, Any] = MappingProxyType(dict(payload))
        self.state: Mapping[str, Any] = MappingProxyType(state) if isinstance(state, dict) else state
        self.step = step
        self.attempt = attempt
        # Bodies run at least once: what one attempt did elsewhere (a space opened, a run dispatched) is recorded
        # under this key, so a repeat of the attempt after a crash finds it instead of doing it again.
        self.run_key = run_key(run_id)
        self.attempt_key = _attempt_key(run_id, step.id, attempt)
        # On a worker, each claim of the attempt is a try with a key of its own (``<attemptKey>.<try>``), and
        # the tries before it (a worker that died) are given with what they recorded: ``{key, workerId,
        # claimedAt, progress, outcome}`` (see ``hangar.pipelines.worker``). In the server: the attempt key, none.
        self.try_key = try_key or self.attempt_key
        self.earlier_tries: tuple[Mapping[str, Any], ...] = tuple(MappingProxyType(dict(t)) for t in earlier_tries)
        # Whether a ``hangar worker`` runs this try: a body whose work outlives the call in the server (an agent
        # run it dispatches) does that work within the call here, under the claim's lease.
        self.on_worker = on_worker
        self.clock = clock
        self._run_dir = run_dir
        # Where ``fileExists`` may look (the run's working directory and its workspace's guest trees).
        self.folders = folders or Folders(run_dir)
        # Where host-run script groups are recorded: never inside the working directory scripts can write.
        self.control_dir = control_dir or run_dir.parent / ".control" / run_dir.name
        self._progress = progress
        self._children = children
        self.resume = resume

    @property
    def app(self) -> AppContext:
        """The server's application context (``step.app.service(...)`` finds other parts' services)."""
        if self._app is None:
            raise Unavailable("this pipeline engine runs without an application context")
        return self._app

    @property
    def maybe_app(self) -> AppContext | None:
        return self._app

    def maybe_service(self, cls: type[T]) -> T | None:
        """Another part's service, or ``None`` (also when the engine runs without an application context)."""
        return self._app.maybe_service(cls) if self._app is not None else None

    @property
    def step_id(self) -> str:
        return self.step.id

    @property
    def kind(self) -> StepKind:
        return self.step.kind

    @property
    def config(self) -> NodeConfig:
        return self.step.config

    @property
    def label(self) -> str:
        return self.step.label

    @property
    def run_dir(self) -> Path:
        """``<dataDir>/pipelines/<pipelineRunId>/``, shared by the run's steps; created on first use."""
        self._run_dir.mkdir(parents=True, exist_ok=True)
        return self._run_dir

    @property
    def children(self) -> ChildRuns:
        if self._children is None:
            raise Unavailable("this pipeline engine cannot start child runs")
        return self._children

    def lookup(self, key: str) -> Any:
        """A value from state, else from the trigger payload (dotted paths reach into maps)."""
        return substitute.lookup(key, self.state, self.payload)

    def has(self, key: str) -> bool:
        return substitute.has_key(key, self.state, self.payload)

    def lookup_or(self, key: str, default: Any = None) -> Any:
        """``lookup`` for a key that may be absent: ``default`` when neither state nor the payload holds it."""
        return self.lookup(key) if self.has(key) else default

    def render(self, text: str, *, shell: bool = False, extra: Mapping[str, Any] | None = None) -> str:
        """``{{key}}`` substitution; ``shell`` quotes each value as one shell word; ``extra`` keys are seen as
        state keys (an item of a collection the body iterates, say)."""
        state = {**self.state, **extra} if extra else self.state
        return substitute.render(text, state, self.payload, shell=shell)

    def inputs(self) -> dict[str, Any]:
        """The node's ``inputKeys`` and their values (a missing key is an error naming it)."""
        return {k: self.lookup(k) for k in self.config.input_keys}

    async def progress(self, data: Mapping[str, Any]) -> None:
        """Report progress; stored (as JSON) in the step-run row and streamed to watchers."""
        await self._progress(data)
