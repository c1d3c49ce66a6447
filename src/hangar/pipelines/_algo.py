"""Pure scheduling: which steps become ready or skipped, how a body's result changes a step and the run's state.

No I/O here (no database, no clock reads, no bodies): the runner (``engine.py``) feeds in what happened and
persists what this module decides. That keeps the semantics of the spec and of CONTRACTS §5 testable on their
own:

- a step's dependencies are its ``trigger.sourceStepIds``, its ``waitForStepIds`` and the ``from`` of every edge
  into it; a dependency is resolved once it is in a terminal state (``completed``, ``failed`` with
  ``continueOnFail``, ``timedOut``, ``skipped``, ``cancelled``);
- a resolved dependency signals *go*, except a skipped one and a router whose chosen route key is not on the
  edge to this step (or a router that failed), which signal *skip*;
- once every dependency is resolved the step is ready, or skipped when every signal is *skip* ("a step whose
  only sources are skipped is skipped"); skips propagate downstream in the same pass;
- the run completes when a terminal step finishes or a body returns ``terminal``, or when nothing is left
  runnable, running or suspended; it fails when a step fails for good without ``continueOnFail``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, MutableMapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

from pydantic.alias_generators import to_camel

from hangar.pipelines import reducers, schema
from hangar.pipelines.model import TERMINAL_STEP, StepDef, StepKind, StepStatus, Template
from hangar.pipelines.step import SUCCESS_OUTCOMES
from hangar.pipelines.step_results import StepResult
from hangar.pipelines.substitute import ABSENT

STEP_ERRORS_KEY = "_stepErrors"
# What dry-run bodies report they would do, one entry per step: parallel steps' reports always merge.
DRY_RUN_KEY = "_dryRun"
SUSPEND_TIMEOUT = timedelta(hours=24)


@dataclass(frozen=True)
class Dep:
    source: str
    # Route keys on the edges from a router source to this step; ``None`` when the source is not a router.
    route_keys: frozenset[str] | None = None


@dataclass(frozen=True)
class Graph:
    template: Template
    order: tuple[str, ...]
    steps: Mapping[str, StepDef]
    deps: Mapping[str, tuple[Dep, ...]]
    dependents: Mapping[str, tuple[str, ...]]

    @classmethod
    def build(cls, template: Template) -> Graph:
        steps = {s.id: s for s in template.steps}
        routers = {s.id for s in template.steps if s.kind is StepKind.router}
        edge_keys: dict[tuple[str, str], set[str]] = {}
        for e in template.edges:
            keys = edge_keys.setdefault((e.from_, e.to), set())
            if e.route_key is not None:
                keys.add(e.route_key)
        deps: dict[str, tuple[Dep, ...]] = {}
        dependents: dict[str, list[str]] = {s.id: [] for s in template.steps}
        for s in template.steps:
            sources = list(dict.fromkeys([*s.source_ids, *s.wait_for_step_ids]))
            sources += [src for (src, to) in edge_keys if to == s.id and src not in sources]
            built = []
            for src in sources:
                route_keys: frozenset[str] | None = None
                if src in routers:
                    route_keys = frozenset(edge_keys.get((src, s.id), ()))
                    # A join that waits for the router itself (no edge) waits for it to settle, whatever the
                    # route it chose.
                    if not route_keys and src not in s.source_ids:
                        route_keys = None
                built.append(Dep(src, route_keys))
                if src in dependents:
                    dependents[src].append(s.id)
            deps[s.id] = tuple(built)
        return cls(
            template=template,
            order=tuple(steps),
            steps=steps,
            deps=deps,
            dependents={k: tuple(v) for k, v in dependents.items()},
        )


@dataclass
class StepRec:
    """The engine's record of one step in one run (what a step-run row holds)."""

    step_id: str
    status: StepStatus = StepStatus.pending
    attempts: int = 0
    error: str | None = None
    route_key: str | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    not_before: datetime | None = None
    suspend: dict[str, Any] | None = None
    deadline: datetime | None = None
    resume: dict[str, Any] | None = None
    progress: dict[str, Any] | None = None


def resolved(rec: StepRec) -> bool:
    return rec.status in TERMINAL_STEP


def _signal(graph: Graph, dep: Dep, rec: StepRec) -> Literal["go", "skip"]:
    if rec.status in (StepStatus.skipped, StepStatus.cancelled):
        return "skip"
    if dep.route_keys is not None:
        if rec.status is not StepStatus.completed:
            return "skip"  # a router that failed (with continueOnFail) chose no branch
        return "go" if rec.route_key in dep.route_keys else "skip"
    return "go"


def readiness(graph: Graph, step_id: str, recs: Mapping[str, StepRec]) -> Literal["wait", "ready", "skip"]:
    deps = graph.deps[step_id]
    if not deps:
        return "ready"
    signals = []
    for dep in deps:
        rec = recs[dep.source]
        if not resolved(rec):
            return "wait"
        signals.append(_signal(graph, dep, rec))
    return "skip" if all(s == "skip" for s in signals) else "ready"


class _Overlay(Mapping[str, StepRec]):
    def __init__(self, base: Mapping[str, StepRec], top: Mapping[str, StepRec]) -> None:
        self._base = base
        self._top = top

    def __getitem__(self, key: str) -> StepRec:
        return self._top.get(key) or self._base[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._base)

    def __len__(self) -> int:
        return len(self._base)


@dataclass
class Plan:
    ready: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def propagate(graph: Graph, recs: Mapping[str, StepRec], candidates: Iterable[str]) -> Plan:
    """Pending candidates that are now ready, and those (with their downstream) now skipped.

    ``recs`` is not modified; skips found in this pass count as resolved for the steps after them.
    """
    plan = Plan()
    overlay: dict[str, StepRec] = {}
    view = _Overlay(recs, overlay)
    queue = list(dict.fromkeys(candidates))
    seen_ready: set[str] = set()
    i = 0
    while i < len(queue):
        sid = queue[i]
        i += 1
        rec = view[sid]
        if rec.status is not StepStatus.pending or sid in seen_ready:
            continue
        verdict = readiness(graph, sid, view)
        if verdict == "ready":
            seen_ready.add(sid)
            plan.ready.append(sid)
        elif verdict == "skip":
            overlay[sid] = StepRec(sid, StepStatus.skipped)
            plan.skipped.append(sid)
            queue.extend(graph.dependents[sid])
    return plan


# -- applying a body's result -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Applied:
    """What a finished attempt means for the run.

    ``outcome``: ``completed`` (downstream evaluated), ``suspended``, ``retry`` (after ``delay_s``),
    ``settled_failure`` (failed for good with continueOnFail: downstream evaluated, run goes on),
    ``run_failed`` (failed for good), ``run_terminal`` (the run is finished).
    """

    outcome: Literal["completed", "suspended", "retry", "settled_failure", "run_failed", "run_terminal"]
    delay_s: float = 0.0
    state_changed: bool = False


def merged_changes(step: StepDef, state: Mapping[str, Any], result: StepResult) -> dict[str, Any]:
    """The state keys a successful result writes, reducers applied; raises ``ValueError`` with a clear message."""
    cfg = step.config
    out_key = cfg.output_key
    reducer = cfg.effective_reducer
    changes: dict[str, Any] = {}
    for key, value in (result.mutated_state or {}).items():
        if key == DRY_RUN_KEY and isinstance(value, Mapping):
            changes[key] = {**(state.get(key) or {}), **value}
        elif key == out_key:
            changes[key] = reducers.reduce_value(reducer, key, state.get(key, ABSENT), value)
        else:
            changes[key] = value
    if result.has_output and out_key:
        before = changes[out_key] if out_key in changes else state.get(out_key, ABSENT)
        changes[out_key] = reducers.reduce_value(reducer, out_key, before, result.output)
    return changes


def output_violation(step: StepDef, result: StepResult) -> str | None:
    """Why the result's output breaks ``outputSchema``, or ``None``."""
    sch = step.config.output_schema
    if sch is None:
        return None
    out_key = step.config.output_key
    if result.has_output:
        value = result.output
    elif out_key and result.mutated_state and out_key in result.mutated_state:
        value = result.mutated_state[out_key]
    else:
        return "the step produced no output to check against outputSchema"
    found = schema.first_violation(value, sch)
    return f"output does not match outputSchema: {found}" if found else None


def apply_result(
    step: StepDef,
    rec: StepRec,
    result: StepResult,
    state: MutableMapping[str, Any],
    now: datetime,
    *,
    timed_out: bool = False,
    since_seq: int = 0,
) -> Applied:
    """Fold one finished attempt into ``rec`` and ``state`` (state is only touched on success or when an error is
    stashed for ``continueOnFail``, so a failing step leaves the rest of the state intact)."""
    if result.kind != "failed":
        problem = output_violation(step, result) if not result.suspends else None
        changes: dict[str, Any] = {}
        if problem is None:
            try:
                changes = merged_changes(step, state, result)
            except ValueError as exc:
                problem = str(exc)
        if problem is not None:
            return apply_result(step, rec, StepResult.failed(problem), state, now, since_seq=since_seq)
        state.update(changes)
        changed = bool(changes)
        rec.error = None
        rec.resume = None
        if result.suspends:
            rec.status = StepStatus.suspended
            rec.suspend = {
                "eventType": result.event_type,
                "match": dict(result.event_match) if result.event_match else None,
                "taskIds": list(result.task_ids),
                # Only events after the attempt started can end the suspension.
                "sinceSeq": since_seq,
            }
            rec.deadline = None if step.config.await_approval else now + SUSPEND_TIMEOUT
            return Applied("suspended", state_changed=changed)
        rec.status = StepStatus.completed
        rec.finished_at = now
        rec.suspend = None
        rec.deadline = None
        rec.not_before = None
        if result.kind == "route":
            rec.route_key = result.route_key
        if result.kind == "terminal" or step.kind is StepKind.terminal:
            return Applied("run_terminal", state_changed=changed)
        return Applied("completed", state_changed=changed)
    # Failure: retry while attempts remain, then fail for good.
    rec.error = result.error or "the step failed"
    rec.suspend = None
    rec.deadline = None
    rec.resume = None
    policy = step.config.retry_policy
    if policy is not None and rec.attempts < policy.max_attempts:
        delay = policy.delay_ms(rec.attempts) / 1000.0
        rec.status = StepStatus.pending
        rec.not_before = now + timedelta(seconds=delay)
        return Applied("retry", delay)
    rec.status = StepStatus.timedOut if timed_out else StepStatus.failed
    rec.finished_at = now
    rec.not_before = None
    if step.config.continue_on_fail:
        errors = dict(state.get(STEP_ERRORS_KEY) or {})
        errors[step.id] = rec.error
        state[STEP_ERRORS_KEY] = errors
        return Applied("settled_failure", state_changed=True)
    return Applied("run_failed")


def start_attempt(rec: StepRec, now: datetime) -> None:
    """A step is about to run (persisted before its body starts)."""
    rec.status = StepStatus.running
    rec.attempts += 1
    rec.started_at = now
    rec.finished_at = None
    rec.not_before = None


def recover(rec: StepRec) -> None:
    """After a crash: an attempt that was running never finished, so it runs again and is not counted."""
    if rec.status is StepStatus.running:
        rec.status = StepStatus.pending
        rec.attempts = max(0, rec.attempts - 1)


def task_resume_result(step: StepDef, outcomes: list[tuple[str, str, Any]]) -> StepResult:
    """The engine's completion of a step that waited for tasks, when its body does not harvest them itself."""
    failed = [(tid, oc) for tid, oc, _ in outcomes if oc not in SUCCESS_OUTCOMES]
    if failed:
        tid, oc = failed[0]
        return StepResult.failed(f"task {tid} finished with outcome {oc}")
    if len(outcomes) == 1:
        return StepResult.ok(output=outcomes[0][2])
    return StepResult.ok(output={tid: out for tid, _, out in outcomes})


def event_matches(suspend: Mapping[str, Any], type_name: str, payload: Mapping[str, Any]) -> bool:
    if suspend.get("eventType") != type_name:
        return False
    match = suspend.get("match") or {}
    return all(_field(payload, k) == v for k, v in match.items())


def _field(payload: Mapping[str, Any], key: str) -> Any:
    """A declared event's payload is camelCase; a step suspended before payloads went camelCase keeps the
    snake_case name it matched on in its stored record (the approval gate's ``agent_id``), so that name finds the
    field too."""
    if key in payload:
        return payload[key]
    return payload.get(to_camel(key)) if "_" in key else None
