"""``hangar pipeline validate|run|emit|show|resume|cancel`` (CONTRACTS §5).

``run`` drives the template in this process until the run ends or every live step is suspended, with the
same application context the server builds (without listening); ``emit`` records a domain event and runs on
whatever it resumed; ``resume`` picks up an unfinished run (for instance after the process was killed);
``cancel`` stops a run whichever process drives it (this one, another command, or the server).
Exit codes: 0 completed (or valid), 1 failed or cancelled, 2 usage or invalid template, 3 suspended.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TypeVar

import typer

from hangar.cli.root import DatabaseUrlOpt, DataDirOpt, command_settings
from hangar.core.commandline import hangar_program
from hangar.errors import HangarError

if TYPE_CHECKING:
    # Only for annotations: the engine, the parts and their models are imported by the command that runs, so
    # `hangar --help` and the other commands start without them.
    from hangar.core.context import AppContext
    from hangar.core.event_types import StoredEvent
    from hangar.pipelines import template as tpl
    from hangar.pipelines.bodies.spec import BodyRegistry
    from hangar.pipelines.engine import PipelineEngine

pipeline_app = typer.Typer(
    help="Validate pipeline templates and run them in this process.", no_args_is_help=True, add_completion=False
)

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_SUSPENDED = 0, 1, 2, 3
SETTLE_POLL_S = 0.1  # how often a run another process took over is looked at until it settles
DEFAULT_WORKSPACE = "default"
T = TypeVar("T")

WorkspaceOpt = Annotated[
    str, typer.Option("--workspace", help="Workspace name (or id); `run` creates it when missing.")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the run(s) as JSON.")]
PayloadOpt = Annotated[str | None, typer.Option("--payload", help="Trigger payload: a JSON object.")]


class Usage(Exception):
    """Bad command-line input: printed, exit 2."""


def _fail(message: str, code: int = EXIT_USAGE) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def _payload(raw: str | None, inputs: list[str]) -> dict[str, Any]:
    payload: dict[str, Any] = {}
    if raw:
        try:
            parsed = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise Usage(f"--payload is not valid JSON: {exc.msg}") from exc
        if not isinstance(parsed, dict):
            raise Usage("--payload must be a JSON object")
        payload.update(parsed)
    for item in inputs:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise Usage(f"--input {item!r} is not KEY=VALUE")
        payload[key] = value
    return payload


def _report(snap: dict[str, Any], as_json: bool) -> int:
    """Print one run (a JSON document or the text form) and give the command's exit code for it."""
    if as_json:
        _dump(snap)
    else:
        _print_run(snap)
    return _exit_code([snap["status"]])


def _exit_code(statuses: list[str]) -> int:
    if any(s in ("failed", "cancelled") for s in statuses):
        return EXIT_FAILED
    if any(s in ("suspended", "running") for s in statuses):
        return EXIT_SUSPENDED
    return EXIT_OK


def _print_run(snap: dict[str, Any]) -> None:
    typer.echo(f"run {snap['runId']}: {snap['status']}")
    for sid, step in snap["steps"].items():
        line = f"  {sid}: {step['status']} (attempts {step['attempts']})"
        if step["error"]:
            line += f" — {step['error']}"
        typer.echo(line)


def _dump(value: Any) -> None:
    typer.echo(json.dumps(value, indent=2, sort_keys=False, default=str))


@asynccontextmanager
async def _engine(
    data_dir: Path | None,
    database_url: str | None,
    handled: set[str] | None = None,
    *,
    drives: str | None = None,
) -> AsyncIterator[tuple[AppContext, PipelineEngine]]:
    """The command's engine. ``handled``: ids of events the command hands to the engine itself (``emit`` needs
    the runs an event touched), which the bus subscription then skips. ``drives``: the command (its name) drives
    runs here, whose steps keep their files in the data directory: refused with a database URL alone."""
    from hangar.pipelines.bodies.spec import BodyRegistry
    from hangar.pipelines.engine import PipelineEngine
    from hangar.pipelines.part import PIPELINES_CLI_PART
    from hangar.rpc.registry import OpRegistry
    from hangar.server.context_factory import open_context
    from hangar.server.dispatch import attach_dispatcher, op_caller
    from hangar.server.parts import all_parts, step_bodies

    why = None if drives is None else f"hangar pipeline {drives} runs steps, which keep their files in a data directory"
    settings = command_settings(data_dir, database_url, needs_files=why)
    parts = [p for p in all_parts() if p.name != "pipelines"] + [PIPELINES_CLI_PART]
    # Agents run here call the product's ops as the server's agents do; no MCP endpoint is served here.
    caller = op_caller(OpRegistry(o for p in parts for o in p.ops))
    async with open_context(settings, parts=parts, services=[caller]) as ctx:
        attach_dispatcher(ctx)
        engine = PipelineEngine.from_app(ctx, BodyRegistry(step_bodies(parts)))
        # Events published in this process (an agent run's TaskFinished, a body's own events) resume the
        # steps waiting on them here, as the server's subscription does.
        engine.subscribed = True
        sub = ctx.bus.subscribe(_forward(engine, set() if handled is None else handled), name="pipelines-cli")
        try:
            yield ctx, engine
        finally:
            await ctx.bus.unsubscribe(sub)
            await engine.aclose()


def _forward(engine: PipelineEngine, handled: set[str]) -> Callable[[StoredEvent], Coroutine[Any, Any, None]]:
    async def forward(ev: StoredEvent) -> None:
        if ev.id in handled:
            handled.discard(ev.id)
            return
        await engine.on_event(ev)

    return forward


async def _drive(ctx: AppContext, engine: PipelineEngine) -> None:
    """Run on until nothing in this process can move: pipeline drivers settle, and agent runs that suspended
    steps wait for finish here too (leaving would interrupt them)."""
    from hangar.agents import AgentRunner

    while True:
        await engine.settle()
        runner = ctx.maybe_service(AgentRunner)
        if runner is None or not runner.busy:
            return
        await runner.wait_idle()
        await ctx.bus.drain()


async def _settled(ctx: AppContext, engine: PipelineEngine, ws: str, run_id: str) -> dict[str, Any]:
    """The run's snapshot once this process is done with it. A run can be running in another process meanwhile:
    any process that sees the event a suspended step waits for may take the run and resume it (a server beside
    this command, told by its event tail), and this process then skips it. While that other process drives it,
    what it makes of the run is the outcome, not the ``running`` of the moment."""
    while True:
        try:
            snap = await engine.snapshot(ws, run_id)
        except Exception:
            # Deleting a workspace stops its runs, then drops its records: on PostgreSQL its schema is gone by now
            # (SQLite's file stays readable to a connection that had it open). The stop made the run cancelled.
            from hangar.identity import IdentityService

            if not await ctx.service(IdentityService).workspace_deleted(ws):
                raise
            return {"runId": run_id, "status": "cancelled", "error": "its workspace was deleted", "steps": {}}
        if snap["status"] != "running" or not await engine.control.driven_elsewhere(run_id):
            return snap
        await asyncio.sleep(SETTLE_POLL_S)


async def _workspace(ctx: AppContext, name: str, *, create: bool) -> str:
    from hangar.identity import IdentityService
    from hangar.identity.creation import create_workspace

    for ws_id in await ctx.service(IdentityService).list_workspace_ids():
        ws = await ctx.service(IdentityService).get_workspace(ws_id)
        if ws is not None and name in (ws.name, ws.id):
            await ctx.dbs.workspace(ws.id, create=True)
            return ws.id
    if not create:
        raise Usage(f"no workspace named {name!r}")
    owner = await ctx.service(IdentityService).ensure_server_owner()
    ws = await create_workspace(ctx, name, owner.id, by="cli")
    return ws.id


def _run_async(main: Callable[[], Coroutine[Any, Any, T]]) -> T:
    from hangar.pipelines import template as tpl

    try:
        return asyncio.run(main())
    except Usage as exc:
        raise _fail(str(exc)) from None
    except tpl.TemplateInvalid as exc:
        for problem in exc.problems:
            typer.echo(f"error: {problem}", err=True)
        raise typer.Exit(EXIT_USAGE) from None
    except HangarError as exc:
        raise _fail(exc.message) from None
    except KeyboardInterrupt:
        # Nothing is lost: the run stays unfinished in the database and `resume` picks it up.
        resume = f"{hangar_program()} pipeline resume RUN_ID"
        raise _fail(f"interrupted; unfinished runs can be driven on with `{resume}`", 130) from None


def _bodies() -> BodyRegistry:
    """Every body the server runs: what the parts contribute, gathered by the composition."""
    from hangar.pipelines.bodies.spec import BodyRegistry
    from hangar.server.parts import all_parts, step_bodies

    return BodyRegistry(step_bodies(all_parts()))


def _load(file: Path) -> tpl.Loaded:
    from hangar.pipelines import template as tpl

    loaded = tpl.load_file(file, _bodies())
    for warning in loaded.warnings:
        typer.echo(f"warning: {warning}", err=True)
    return loaded


@pipeline_app.command("validate")
def validate(file: Annotated[Path, typer.Argument(help="Template file (JSON or YAML).")]) -> None:
    """Check a template: exit 0 when valid; warnings (such as an unregistered body key) on stderr."""

    async def main() -> int:
        loaded = _load(file)
        typer.echo(f"{file}: valid ({len(loaded.template.steps)} steps)")
        return EXIT_OK

    raise typer.Exit(_run_async(main))


@pipeline_app.command("run")
def run(
    file: Annotated[Path, typer.Argument(help="Template file (JSON or YAML).")],
    data_dir: DataDirOpt = None,
    database_url: DatabaseUrlOpt = None,
    workspace: WorkspaceOpt = DEFAULT_WORKSPACE,
    inputs: Annotated[
        list[str] | None, typer.Option("--input", help="KEY=VALUE added to the trigger payload (repeatable).")
    ] = None,
    payload: PayloadOpt = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Bodies report what they would do.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Run a template until the run ends or every live step is suspended."""

    async def main() -> int:
        from hangar.pipelines import triggers

        loaded = _load(file)
        body = _payload(payload, inputs or [])
        async with _engine(data_dir, database_url, drives="run") as (ctx, engine):
            ws = await _workspace(ctx, workspace, create=True)
            trigger_id = await triggers.manual_trigger_id(engine, ws, loaded.template.id, by="cli", stored=False)
            run_id = await engine.start_run(
                ws, loaded.template, payload=body, dry_run=dry_run, trigger_id=trigger_id, by="cli"
            )
            assert run_id is not None
            # On stderr, so --json output stays one document; the id is what `resume` needs after a crash.
            typer.echo(f"run {run_id} started", err=True)
            await _drive(ctx, engine)
            snap = await _settled(ctx, engine, ws, run_id)
        return _report(snap, as_json)

    raise typer.Exit(_run_async(main))


@pipeline_app.command("emit")
def emit(
    event_type: Annotated[str, typer.Argument(help="Domain event type, e.g. review.approved.")],
    payload: PayloadOpt = None,
    data_dir: DataDirOpt = None,
    database_url: DatabaseUrlOpt = None,
    workspace: WorkspaceOpt = DEFAULT_WORKSPACE,
    as_json: JsonOpt = False,
) -> None:
    """Record a domain event, resume the runs suspended on it (and start its event triggers), run them on."""

    async def main() -> int:
        body = _payload(payload, [])
        handled: set[str] = set()
        async with _engine(data_dir, database_url, handled, drives="emit") as (ctx, engine):
            ctx.bus.registry.check_user_type(event_type, "EVENT_TYPE")
            ws = await _workspace(ctx, workspace, create=False)
            await engine.expire_suspensions(ws)
            stored = await ctx.bus.publish_raw(ws, event_type, body)
            # Marked before this task yields, so the subscription cannot hand the same event over twice.
            handled.add(stored.id)
            run_ids = await engine.on_event(stored)
            await _drive(ctx, engine)
            snaps = [await _settled(ctx, engine, ws, r) for r in run_ids]
        if as_json:
            _dump(snaps)
        else:
            typer.echo(f"recorded {event_type} (#{stored.seq}); {len(snaps)} run(s) resumed or started")
            for snap in snaps:
                _print_run(snap)
        return _exit_code([s["status"] for s in snaps])

    raise typer.Exit(_run_async(main))


@pipeline_app.command("show")
def show(
    run_id: Annotated[str, typer.Argument(help="Pipeline run id.")],
    data_dir: DataDirOpt = None,
    database_url: DatabaseUrlOpt = None,
    workspace: WorkspaceOpt = DEFAULT_WORKSPACE,
) -> None:
    """Print a run as JSON: {runId, status, state, steps: {stepId: {status, attempts, error}}}."""

    async def main() -> int:
        async with _engine(data_dir, database_url) as (ctx, engine):
            ws = await _workspace(ctx, workspace, create=False)
            snap = await engine.snapshot(ws, run_id)
        _dump(snap)
        return EXIT_OK

    raise typer.Exit(_run_async(main))


@pipeline_app.command("resume")
def resume(
    run_id: Annotated[str, typer.Argument(help="Pipeline run id.")],
    data_dir: DataDirOpt = None,
    database_url: DatabaseUrlOpt = None,
    workspace: WorkspaceOpt = DEFAULT_WORKSPACE,
    as_json: JsonOpt = False,
) -> None:
    """Drive an unfinished run again (after a crash or kill): steps that completed are never run again."""

    async def act(engine: PipelineEngine, ws: str) -> None:
        await engine.expire_suspensions(ws)
        await engine.resume(ws, run_id)

    _act_on_run(run_id, data_dir, database_url, workspace, as_json, act, drives="resume")


@pipeline_app.command("cancel")
def cancel(
    run_id: Annotated[str, typer.Argument(help="Pipeline run id.")],
    data_dir: DataDirOpt = None,
    database_url: DatabaseUrlOpt = None,
    workspace: WorkspaceOpt = DEFAULT_WORKSPACE,
    as_json: JsonOpt = False,
) -> None:
    """Cancel an unfinished run, whichever process drives it, and print it once it has ended (exit 1: cancelled)."""

    async def act(engine: PipelineEngine, ws: str) -> None:
        await engine.cancel(ws, run_id, by="cli")

    _act_on_run(run_id, data_dir, database_url, workspace, as_json, act)


def _act_on_run(
    run_id: str,
    data_dir: Path | None,
    database_url: str | None,
    workspace: str,
    as_json: bool,
    act: Callable[[PipelineEngine, str], Awaitable[None]],
    *,
    drives: str | None = None,
) -> NoReturn:
    """Do something to a run, drive what it set moving until nothing here can move, then report the run."""

    async def main() -> int:
        async with _engine(data_dir, database_url, drives=drives) as (ctx, engine):
            ws = await _workspace(ctx, workspace, create=False)
            await act(engine, ws)
            await _drive(ctx, engine)
            snap = await _settled(ctx, engine, ws, run_id)
        return _report(snap, as_json)

    raise typer.Exit(_run_async(main))
