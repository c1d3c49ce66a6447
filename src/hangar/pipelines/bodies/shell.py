"""``shell.run``: a bash script in the run's working directory.

The script's ``{{key}}`` placeholders are filled from state, then the trigger payload, each value quoted as
one shell word. Every shell step of a run shares ``<dataDir>/pipelines/<pipelineRunId>/`` as its working
directory (also written to state as ``<stepId>_runDir``). Exit 0 puts the trimmed stdout under ``outputKey``;
any other exit fails the step with the tail of stderr. A step timeout or a cancelled run kills the script's
whole process group. While the script runs its group is recorded under ``<runDir>/.shell/<stepId>``, so when the
driving process dies, whoever drives the run next kills what it left running (``procs.kill_orphaned_groups``).

Other parts add environment variables (a forge token, for one) by providing a ``ShellEnvironment`` service.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
from collections.abc import Mapping

from hangar.pipelines._algo import DRY_RUN_KEY
from hangar.pipelines.bodies.spec import ConfigField, body
from hangar.pipelines.procs import record_group
from hangar.pipelines.results import NO_OUTPUT, StepResult
from hangar.pipelines.step import StepContext

STDERR_TAIL_CHARS = 2000


class ShellEnvironment:
    """Subclassed and provided by a part (``app.provide(x, as_type=ShellEnvironment)``) to add variables to
    shell steps; this base adds none."""

    async def env_for(self, step: StepContext) -> Mapping[str, str]:
        """Variables for this step's script (e.g. a short-lived forge token)."""
        return {}


def stderr_tail(raw: bytes) -> str:
    text = raw.decode("utf-8", errors="replace").strip()
    if len(text) > STDERR_TAIL_CHARS:
        text = "…" + text[-STDERR_TAIL_CHARS:]
    return text


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


@body(
    "shell.run",
    summary="Runs a bash script in the run's shared directory; trimmed stdout goes to outputKey.",
    config=[
        ConfigField("script", "Bash script; {{key}} placeholders get shell-escaped values", required=True),
        ConfigField("outputKey", "State key receiving the trimmed stdout on exit 0"),
    ],
    honours_dry_run=True,
)
async def shell_run(step: StepContext) -> StepResult:
    script = step.render(step.config.script or "", shell=True)
    run_dir = step.run_dir
    written = {f"{step.step_id}_runDir": str(run_dir)}
    if step.dry_run:
        await step.progress({"dryRun": True, "wouldRun": script, "cwd": str(run_dir)})
        return StepResult.ok({**written, DRY_RUN_KEY: {step.step_id: f"bash -c {script}"}})
    bash = shutil.which("bash")
    if bash is None:
        return StepResult.failed("bash is not installed on this host; shell steps cannot run")
    env = dict(os.environ)
    env.update(
        {
            "HANGAR_PIPELINE_RUN_ID": step.run_id,
            "HANGAR_WORKSPACE_ID": step.workspace_id,
            "HANGAR_STEP_ID": step.step_id,
            "HANGAR_RUN_DIR": str(run_dir),
        }
    )
    extra = step.maybe_service(ShellEnvironment)
    if extra is not None:
        env.update(await extra.env_for(step))
    proc = await asyncio.create_subprocess_exec(
        bash,
        "-c",
        script,
        cwd=run_dir,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    recorded = record_group(run_dir, step.step_id, proc.pid)
    try:
        out, err = await proc.communicate()
    except BaseException:
        # Timed out or cancelled: the script and everything it started go with it.
        _kill_group(proc)
        await proc.wait()
        raise
    finally:
        recorded.unlink(missing_ok=True)
    if proc.returncode != 0:
        tail = stderr_tail(err)
        return StepResult.failed(f"script exited with status {proc.returncode}" + (f": {tail}" if tail else ""))
    output = out.decode("utf-8", errors="replace").strip()
    return StepResult.ok(written, output=output if step.config.output_key else NO_OUTPUT)


BODIES = [shell_run]
