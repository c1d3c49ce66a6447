"""RPC ops of the pipelines part (all workspace-scoped).

Reads are open to guests; editing templates and running pipelines needs a member; deleting templates and
triggers needs an admin. Ops that may start shell steps declare the ``processSpawn`` action class. Argument
names are camelCase on the wire (``templateId``, ``runId``, ``dryRun``); snake_case is accepted too.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any, Literal

from pydantic import ConfigDict, Field
from pydantic.alias_generators import to_camel

from hangar.core.part import OpFunction
from hangar.errors import InvalidArgs
from hangar.pipelines import references, triggers
from hangar.pipelines import template as tpl
from hangar.pipelines.engine import PipelineEngine
from hangar.pipelines.model import FINISHED_RUN, TERMINAL_STEP, RunStatus, StepStatus
from hangar.pipelines.results import (
    BodyInfo,
    BodyList,
    Deleted,
    Emitted,
    RunDetail,
    RunList,
    RunSnapshot,
    RunStarted,
    RunWatchReply,
    StepsChanged,
    TemplateCheck,
    TemplateDetail,
    TemplateList,
    TemplateSaved,
    TriggerList,
    TriggerView,
)
from hangar.pipelines.runtime import PipelinesRuntime
from hangar.pipelines.views import run_detail, run_snapshot, run_summary
from hangar.rpc.context import OpContext
from hangar.rpc.registry import Args, NoArgs, op


class PlArgs(Args):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, alias_generator=to_camel)


class TemplateArgs(PlArgs):
    template: dict[str, Any]


class TemplateRef(PlArgs):
    template_id: str


class TemplateUpdateArgs(PlArgs):
    template_id: str
    template: dict[str, Any]


class RunStartArgs(PlArgs):
    template_id: str
    payload: dict[str, Any] = Field(default_factory=dict)
    dry_run: bool = False


class RunRef(PlArgs):
    run_id: str


class RunWaitArgs(PlArgs):
    run_id: str
    timeout_seconds: float = Field(
        default=600, ge=1, le=3600, description="how long to wait before answering with the run as it stands"
    )


class RunListArgs(PlArgs):
    template_id: str | None = None
    status: RunStatus | None = None
    parent_run_id: str | None = None
    limit: int = Field(default=100, ge=1, le=1000)


class RunWatchArgs(PlArgs):
    run_id: str | None = None


class TriggerCreateArgs(PlArgs):
    template_id: str
    kind: Literal["manual", "event", "schedule", "pullRequest"]
    event_type: str | None = None
    cron: str | None = None
    payload: dict[str, Any] = Field(default_factory=dict)


class TriggerListArgs(PlArgs):
    template_id: str | None = None


class TriggerRef(PlArgs):
    trigger_id: str


class TriggerEnableArgs(PlArgs):
    trigger_id: str
    enabled: bool


class EmitArgs(PlArgs):
    event_type: str = Field(min_length=1, max_length=128)
    payload: dict[str, Any] = Field(default_factory=dict)


def _engine(ctx: OpContext) -> PipelineEngine:
    return ctx.app.service(PipelineEngine)


def _load(ctx: OpContext, raw: dict[str, Any]) -> tpl.Loaded:
    return tpl.load(raw, _engine(ctx).bodies)


async def _checked(ctx: OpContext, raw: dict[str, Any]) -> tpl.Loaded:
    """The template as ``_load`` finds it, with the records it names looked up in the caller's workspace: every
    problem of either kind is listed at once (``TemplateInvalid``)."""
    engine = _engine(ctx)
    template = tpl.parse(raw)
    problems, warnings = tpl.check(template, engine.bodies)
    problems += await references.problems(ctx, template, engine.bodies, engine.store)
    if problems:
        raise tpl.TemplateInvalid(problems)
    return tpl.Loaded(template, warnings)


def _poke_scheduler(ctx: OpContext) -> None:
    runtime = ctx.app.maybe_service(PipelinesRuntime)
    if runtime is not None:
        runtime.scheduler.poke()


@op("pipelines.templates.validate", kind="read", scope="workspace")
async def templates_validate(ctx: OpContext, args: TemplateArgs) -> TemplateCheck:
    """Check a template without storing it: its problems (the records it names among them: an agent, team,
    space, repo or template this workspace does not hold, or the caller cannot see) and warnings."""
    try:
        loaded = await _checked(ctx, args.template)
    except tpl.TemplateInvalid as exc:
        return TemplateCheck(valid=False, problems=exc.problems, warnings=[])
    return TemplateCheck(valid=True, problems=[], warnings=loaded.warnings)


@op("pipelines.templates.create", kind="mutate", scope="workspace")
async def templates_create(ctx: OpContext, args: TemplateArgs) -> TemplateSaved:
    """Store a new template (refused with every problem named when it is invalid, a record it names that the
    workspace does not hold among them)."""
    loaded = await _checked(ctx, args.template)
    wire = loaded.template.to_wire()
    await _engine(ctx).store.insert_template(ctx.ws, wire, by=ctx.principal.label, now=ctx.app.clock.now())
    await ctx.audit("pipelines.template.create", f"pipeline-template:{wire['id']}")
    return TemplateSaved(id=wire["id"], warnings=loaded.warnings)


@op("pipelines.templates.list", kind="read", scope="workspace")
async def templates_list(ctx: OpContext, args: NoArgs) -> TemplateList:
    """The workspace's templates."""
    return TemplateList(templates=await _engine(ctx).store.list_templates(ctx.ws))


@op("pipelines.templates.get", kind="read", scope="workspace")
async def templates_get(ctx: OpContext, args: TemplateRef) -> TemplateDetail:
    """One template, with the warnings it loads with today (e.g. a body no longer registered)."""
    wire = await _engine(ctx).store.get_template(ctx.ws, args.template_id)
    try:
        warnings = _load(ctx, wire).warnings
    except tpl.TemplateInvalid as exc:
        warnings = exc.problems
    return TemplateDetail(template=wire, warnings=warnings)


@op("pipelines.templates.update", kind="mutate", scope="workspace")
async def templates_update(ctx: OpContext, args: TemplateUpdateArgs) -> TemplateSaved:
    """Replace a template (checked as ``create`` checks it); runs already started keep the version they started
    with."""
    loaded = await _checked(ctx, args.template)
    wire = loaded.template.to_wire()
    if wire["id"] != args.template_id:
        raise InvalidArgs(
            f"template.id {wire['id']!r} differs from templateId {args.template_id!r}", field="template.id"
        )
    await _engine(ctx).store.update_template(ctx.ws, wire, now=ctx.app.clock.now())
    await ctx.audit("pipelines.template.update", f"pipeline-template:{wire['id']}")
    return TemplateSaved(id=wire["id"], warnings=loaded.warnings)


@op("pipelines.templates.delete", kind="destructive", scope="workspace", min_role="admin")
async def templates_delete(ctx: OpContext, args: TemplateRef) -> Deleted:
    """Delete a template and its triggers (its runs stay, with their own copy of the template)."""
    await _engine(ctx).store.delete_template(ctx.ws, args.template_id)
    await ctx.audit("pipelines.template.delete", f"pipeline-template:{args.template_id}")
    _poke_scheduler(ctx)
    return Deleted(deleted=args.template_id)


@op("pipelines.runs.start", kind="mutate", scope="workspace", actions=["processSpawn"])
async def runs_start(ctx: OpContext, args: RunStartArgs) -> RunStarted:
    """Start a run of a stored template (manual trigger) with a payload; ``dryRun`` makes bodies report only."""
    engine = _engine(ctx)
    template = await engine.stored_template(ctx.ws, args.template_id)
    trigger_id = await triggers.manual_trigger_id(engine, ctx.ws, args.template_id, by=ctx.principal.label)
    run_id = await engine.start_run(
        ctx.ws,
        template,
        payload=args.payload,
        dry_run=args.dry_run,
        trigger_kind="manual",
        trigger_id=trigger_id,
        by=ctx.principal.label,
    )
    assert run_id is not None  # manual firings have no key, so they never collide
    await ctx.audit(
        "pipelines.run.start", f"pipeline-run:{run_id}", {"templateId": args.template_id, "dryRun": args.dry_run}
    )
    return RunStarted(run_id=run_id)


@op("pipelines.runs.cancel", kind="mutate", scope="workspace")
async def runs_cancel(ctx: OpContext, args: RunRef) -> RunSnapshot:
    """Cancel an unfinished run, whichever process drives it: running bodies are stopped, suspended steps
    cancelled; returns the run once it has ended."""
    engine = _engine(ctx)
    await engine.cancel(ctx.ws, args.run_id, by=ctx.principal.label)
    await ctx.audit("pipelines.run.cancel", f"pipeline-run:{args.run_id}")
    return run_snapshot(*await engine.store.load_run(ctx.ws, args.run_id))


@op("pipelines.runs.list", kind="read", scope="workspace")
async def runs_list(ctx: OpContext, args: RunListArgs) -> RunList:
    """Runs, newest first, optionally of one template, in one status, or children of one run."""
    rows = await _engine(ctx).store.list_runs(
        ctx.ws,
        template_id=args.template_id,
        status=args.status.value if args.status else None,
        parent_run_id=args.parent_run_id,
        limit=args.limit,
    )
    return RunList(runs=[run_summary(r) for r in rows])


async def _detail(ctx: OpContext, run_id: str) -> RunDetail:
    run, recs = await _engine(ctx).store.load_run(ctx.ws, run_id)
    labels = {s["id"]: (s.get("config") or {}).get("label") or s["id"] for s in run.template.get("steps", [])}
    return run_detail(run, recs, labels)


@op("pipelines.runs.get", kind="read", scope="workspace")
async def runs_get(ctx: OpContext, args: RunRef) -> RunDetail:
    """A run with its step runs: status, attempts, errors, timings, suspension and progress."""
    return await _detail(ctx, args.run_id)


# A run another process drives tells this one nothing, so waiting also reads the store this often.
WAIT_POLL_SECONDS = 1.0
SETTLED = FINISHED_RUN | {RunStatus.suspended}


def _how_far(run: RunDetail) -> str:
    done = sum(1 for s in run.steps if s.status in TERMINAL_STEP)
    running = [s.label for s in run.steps if s.status == StepStatus.running]
    doing = f"; running: {', '.join(running)}" if running else ""
    return f"run {run.status.value}: {done} of {len(run.steps)} steps done{doing}"


@op("pipelines.runs.wait", kind="read", scope="workspace")
async def runs_wait(ctx: OpContext, args: RunWaitArgs) -> RunDetail:
    """Wait until a run settles (completed, failed, cancelled, or suspended waiting on a person or an event) and
    answer with it; after ``timeoutSeconds`` answer with the run as it stands (still running). Callers that asked
    for progress hear how far it got at every step change."""
    engine = _engine(ctx)
    listener = engine.listen(ctx.ws, args.run_id)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + args.timeout_seconds
    said = ""
    try:
        while True:
            run = await _detail(ctx, args.run_id)
            if run.status in SETTLED or loop.time() >= deadline:
                return run
            if (news := _how_far(run)) != said:
                said = news
                await ctx.report(news)
            wait = min(WAIT_POLL_SECONDS, deadline - loop.time())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(listener.queue.get(), max(wait, 0))
            while not listener.queue.empty():  # a burst of changes is one look at the store
                listener.queue.get_nowait()
    finally:
        engine.unlisten(listener)


@op("pipelines.runs.watch", kind="watch", scope="workspace", result=RunWatchReply, events=StepsChanged)
async def runs_watch(ctx: OpContext, args: RunWatchArgs) -> AsyncIterator[RunWatchReply | dict[str, Any]]:
    """Follow step-run changes as they are stored: of one run (replying with the run), or of every run in the
    workspace (replying with the run list); each event frame is ``{runId, status, steps: [...]}``."""
    engine = _engine(ctx)
    listener = engine.listen(ctx.ws, args.run_id)
    try:
        if args.run_id is not None:
            yield RunWatchReply(await _detail(ctx, args.run_id))
        else:
            yield RunWatchReply(RunList(runs=[run_summary(r) for r in await engine.store.list_runs(ctx.ws, limit=100)]))
        while True:  # the step changes (``StepsChanged``, in wire form)
            yield await listener.queue.get()
    finally:
        engine.unlisten(listener)


@op("pipelines.triggers.create", kind="mutate", scope="workspace", actions=["processSpawn"])
async def triggers_create(ctx: OpContext, args: TriggerCreateArgs) -> TriggerView:
    """Add a trigger to a template: ``event`` (eventType), ``schedule`` (cron, UTC) or ``pullRequest`` (a pull
    request of a linked forge repo opened or pushed to; the run's payload has repo_id, repo_full_name, pr_number
    and head_sha)."""
    row = await triggers.create_trigger(
        _engine(ctx),
        ctx.ws,
        template_id=args.template_id,
        kind=args.kind,
        event_type=args.event_type,
        cron=args.cron,
        payload=args.payload,
        by=ctx.principal.label,
    )
    await ctx.audit("pipelines.trigger.create", f"pipeline-trigger:{row.id}", {"templateId": args.template_id})
    _poke_scheduler(ctx)
    return TriggerView.model_validate(row)


@op("pipelines.triggers.list", kind="read", scope="workspace")
async def triggers_list(ctx: OpContext, args: TriggerListArgs) -> TriggerList:
    """Trigger rows, optionally of one template."""
    rows = await _engine(ctx).store.list_triggers(ctx.ws, template_id=args.template_id)
    return TriggerList(triggers=[TriggerView.model_validate(r) for r in rows])


@op("pipelines.triggers.setEnabled", kind="mutate", scope="workspace", actions=["processSpawn"])
async def triggers_set_enabled(ctx: OpContext, args: TriggerEnableArgs) -> TriggerView:
    """Pause or resume a trigger: a disabled event or schedule trigger starts no runs."""
    row = await _engine(ctx).store.set_trigger_enabled(ctx.ws, args.trigger_id, args.enabled)
    await ctx.audit("pipelines.trigger.setEnabled", f"pipeline-trigger:{row.id}", {"enabled": args.enabled})
    _poke_scheduler(ctx)
    return TriggerView.model_validate(row)


@op("pipelines.triggers.delete", kind="destructive", scope="workspace", min_role="admin")
async def triggers_delete(ctx: OpContext, args: TriggerRef) -> Deleted:
    """Remove a trigger (runs it started stay)."""
    await _engine(ctx).store.delete_trigger(ctx.ws, args.trigger_id)
    await ctx.audit("pipelines.trigger.delete", f"pipeline-trigger:{args.trigger_id}")
    _poke_scheduler(ctx)
    return Deleted(deleted=args.trigger_id)


@op("pipelines.emit", kind="mutate", scope="workspace", actions=["processSpawn"])
async def emit(ctx: OpContext, args: EmitArgs) -> Emitted:
    """Record a domain event of your own namespace (``review.approved``; the server's own types are refused):
    it resumes the steps suspended on it and fires its event triggers."""
    ctx.app.bus.registry.check_user_type(args.event_type)
    stored = await ctx.app.bus.publish_raw(ctx.ws, args.event_type, args.payload)
    await ctx.audit("pipelines.emit", f"event:{args.event_type}", {"seq": stored.seq})
    return Emitted(seq=stored.seq, id=stored.id)


@op("pipelines.bodies.list", kind="read", scope="workspace")
async def bodies_list(ctx: OpContext, args: NoArgs) -> BodyList:
    """Registered bodies: key, one-line summary and the settings each reads."""
    return BodyList(bodies=[BodyInfo.model_validate(b) for b in _engine(ctx).bodies.specs])


PIPELINE_OPS: list[OpFunction] = [
    templates_validate,
    templates_create,
    templates_list,
    templates_get,
    templates_update,
    templates_delete,
    runs_start,
    runs_cancel,
    runs_list,
    runs_get,
    runs_wait,
    runs_watch,
    triggers_create,
    triggers_list,
    triggers_set_enabled,
    triggers_delete,
    emit,
    bodies_list,
]
