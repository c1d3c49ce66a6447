"""``shell.run``: a bash script in the run's working directory, confined in the run's enclosure.

The script's ``{{key}}`` placeholders are filled from state, then the trigger payload, each value quoted as
one shell word. Every shell step of a run shares ``<dataDir>/pipelines/<pipelineRunId>/`` as its working
directory (its host path is written to state as ``<stepId>_runDir``). The scripts of a run share one warm
enclosure (``hangar.core.confine``): the working directory is mounted as theirs, they run as the rig user with
the terminal's egress allowlist and see neither the data directory nor the host; their environment holds
``HANGAR_RUN_DIR`` (the directory as they see it), the run, workspace and step ids, ``HANGAR_ATTEMPT_KEY`` (this
try's key) and ``HANGAR_EARLIER_ATTEMPTS`` (the keys of earlier tries a dead worker began), and what other parts add,
never the server's environment. Exit 0 puts the trimmed stdout under ``outputKey``; any other exit fails the
step with the tail of stderr (and, when the run directory's disk is full, its quota). A step timeout or a cancelled
run kills the script and what it started.

While the step waits for the run's enclosure (a first start builds the terminal image; then the boot), its progress
says so: ``{"waiting": "terminal image: downloading packages (4/10)", "step": 4, "steps": 10}``, emptied (``{}``)
once the script starts. A wait that fails (the image's build) fails the step with the reason.

Other parts add environment variables (a forge token, for one) by providing a ``ShellEnvironment`` service: it is
entered before the script starts and left when the step ends, however it ends (a forge token is revoked then). The
values it calls secret are replaced with ``[redacted]`` in the step's output and in its error.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field

from hangar.core.brokering import CredentialSource
from hangar.core.confine import Confinement, Job, Scope, Wait, confinement_for
from hangar.core.disks import RUN_DISK_SETTING, full_note
from hangar.core.redact import Redactor
from hangar.errors import HangarError
from hangar.pipelines._algo import DRY_RUN_KEY
from hangar.pipelines.bodies.spec import ConfigField, body
from hangar.pipelines.layout import pipeline_run_key
from hangar.pipelines.step import StepContext
from hangar.pipelines.step_results import NO_OUTPUT, StepResult

STDERR_TAIL_CHARS = 2000


@dataclass(frozen=True)
class ShellVariables:
    env: Mapping[str, str] = field(default_factory=dict)
    secrets: tuple[str, ...] = ()  # values never shown in the step's output or error


class ShellEnvironment:
    """Subclassed and provided by a part (``app.provide(x, as_type=ShellEnvironment)``) to add variables to
    shell steps; this base adds none."""

    @contextlib.asynccontextmanager
    async def variables(
        self, step: StepContext, confinement: Confinement, scope: Scope
    ) -> AsyncIterator[ShellVariables]:
        """Variables for this step's script while it runs (e.g. a short-lived forge token, ended on exit). A
        ``HangarError`` raised here fails the step with its message."""
        yield ShellVariables()


class RepoCredentials(ShellEnvironment):
    """The credentials a ``CredentialSource`` gives for the repos a step's ``repoIds`` names, while the step runs
    (none asked for a step naming none); ``source_for`` picks the source for the step (a worker's is bound to the
    step's try)."""

    def __init__(self, source_for: Callable[[StepContext], CredentialSource]) -> None:
        self._source_for = source_for

    @contextlib.asynccontextmanager
    async def variables(
        self, step: StepContext, confinement: Confinement, scope: Scope
    ) -> AsyncIterator[ShellVariables]:
        refs = list(step.config.repo_ids)
        if not refs:
            yield ShellVariables()
            return
        async with self._source_for(step).environment(step.workspace_id, refs, confinement, scope) as brokered:
            yield ShellVariables(brokered.env, brokered.secrets)


def stderr_tail(text: str) -> str:
    text = text.strip()
    if len(text) > STDERR_TAIL_CHARS:
        text = "…" + text[-STDERR_TAIL_CHARS:]
    return text


def run_scope(step: StepContext) -> Scope:
    """The run's enclosure: shared by every shell step of the run, released when the run finishes."""
    return Scope(pipeline_run_key(step.run_id), step.workspace_id, step.run_dir, step.control_dir)


@body(
    "shell.run",
    summary="Runs a bash script in the run's shared directory; trimmed stdout goes to outputKey.",
    config=[
        ConfigField("script", "Bash script; {{key}} placeholders get shell-escaped values", required=True),
        ConfigField("outputKey", "State key receiving the trimmed stdout on exit 0"),
    ],
    honours_dry_run=True,
    on_worker=True,
    # Its forge token is minted by a server (``hangar.agents.tools.worker_forge_link``).
    needs_server=lambda step: bool(step.config.repo_ids),
)
async def shell_run(step: StepContext) -> StepResult:
    script = step.render(step.config.script or "", shell=True)
    run_dir = step.run_dir
    written = {f"{step.step_id}_runDir": str(run_dir)}
    if step.dry_run:
        await step.progress({"dryRun": True, "wouldRun": script, "cwd": str(run_dir)})
        return StepResult.ok({**written, DRY_RUN_KEY: {step.step_id: f"bash -c {script}"}})
    confinement = await confinement_for(step.maybe_app)
    scope = run_scope(step)
    env = {
        "HANGAR_PIPELINE_RUN_ID": step.run_id,
        "HANGAR_WORKSPACE_ID": step.workspace_id,
        "HANGAR_STEP_ID": step.step_id,
        "HANGAR_RUN_DIR": confinement.workdir_seen(scope),
        # Which try this is, and the tries a dead worker began before it (space-separated), for idempotence.
        "HANGAR_ATTEMPT_KEY": step.try_key,
        "HANGAR_EARLIER_ATTEMPTS": " ".join(str(t["key"]) for t in step.earlier_tries),
    }
    extra = step.maybe_service(ShellEnvironment) or ShellEnvironment()
    async with contextlib.AsyncExitStack() as stack:
        try:
            added = await stack.enter_async_context(extra.variables(step, confinement, scope))
        except HangarError as exc:  # refused (a forge token for a host the enclosure cannot reach...)
            return StepResult.failed(exc.message)
        env.update(added.env)
        return await _run(step, confinement, scope, script, env, written, Redactor(added.secrets))
    raise AssertionError("unreachable")  # mypy: AsyncExitStack may swallow exceptions


async def _run(
    step: StepContext,
    confinement: Confinement,
    scope: Scope,
    script: str,
    env: Mapping[str, str],
    written: Mapping[str, str],
    redactor: Redactor,
) -> StepResult:
    async def waiting(wait: Wait) -> None:
        await step.progress({} if wait.over else {"waiting": wait.text, "step": wait.step, "steps": wait.steps})

    done = await confinement.run(scope, Job(("bash", "-c", script), env, group_name=step.step_id), None, waiting)
    if done.exit_code != 0:
        tail = stderr_tail(redactor.clean(done.stderr))
        full = await asyncio.to_thread(full_note, step.run_dir, RUN_DISK_SETTING)
        return StepResult.failed(
            f"script exited with status {done.exit_code}"
            + (f": {tail}" if tail else "")
            + (f" (the run directory is out of room: {full})" if full else "")
        )
    output = redactor.clean(done.stdout).strip()
    return StepResult.ok(dict(written), output=output if step.config.output_key else NO_OUTPUT)


BODIES = [shell_run]
