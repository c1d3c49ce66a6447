"""The ``command`` adapter: a command-line agent run as a subprocess in the space's working folder.

The prompt goes to stdin (``promptVia: stdin``) or into argv (``promptVia: arg``: replaces a ``{prompt}``
element, else is appended). Stdout is relayed as text deltas while the program runs, and posted whole as the
agent's reply when it exits 0. The program runs in its own process group, so an interrupt (or the timeout)
ends it and everything it started.

Input contract: the environment carries ``HANGAR_RUN_ID``, ``HANGAR_SPACE_ID``, ``HANGAR_WORKSPACE_ID``,
``HANGAR_CONTEXT_FILE`` and ``HANGAR_OUTPUT_FILE``; with an output schema also ``HANGAR_OUTPUT_SCHEMA``. The
context file is a JSON document with what a chat-completions agent would be given: the agent (id, name, role,
system prompt), the prompt, and the space's recent messages oldest first (author kind and name, content, ``own``
when this agent wrote it), so a command-line agent can hold a conversation instead of seeing one prompt. It is
written 0600 and removed when the run ends.

Output contract: A program that writes a JSON
document to ``$HANGAR_OUTPUT_FILE`` submits it (the command-line equivalent of ``submit_output``); otherwise the
last stdout line that parses as JSON is submitted.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import json
import os
import signal
from pathlib import Path
from typing import Any

from hangar.agents.adapters.base import Adapter, RunIO, RunRequest, RunResult
from hangar.agents.config import CommandAdapter
from hangar.core.fileio import write_private_atomic
from hangar.pipelines.procs import record_group

_STDERR_TAIL = 2000
_KILL_GRACE_SECONDS = 2.0


class CommandLineAdapter(Adapter):
    def __init__(self, config: CommandAdapter) -> None:
        self._cfg = config

    def _argv(self, prompt: str) -> list[str]:
        argv = list(self._cfg.argv)
        if self._cfg.prompt_via == "arg":
            if "{prompt}" in argv:
                argv = [prompt if a == "{prompt}" else a for a in argv]
            else:
                argv.append(prompt)
        return argv

    async def run(self, request: RunRequest, io: RunIO) -> RunResult:
        turn = 1
        await io.turn_started(turn)
        request.folder.mkdir(parents=True, exist_ok=True)
        out_file = request.folder / f".hangar-output-{request.run_id}.json"
        context_file = request.folder / f".hangar-context-{request.run_id}.json"
        write_private_atomic(context_file, json.dumps(_context(request), ensure_ascii=False).encode())
        env = {
            **os.environ,
            **self._cfg.env,
            **request.secret_env,
            "HANGAR_RUN_ID": request.run_id,
            "HANGAR_SPACE_ID": request.space_id,
            "HANGAR_WORKSPACE_ID": request.workspace_id,
            "HANGAR_OUTPUT_FILE": str(out_file),
            "HANGAR_CONTEXT_FILE": str(context_file),
        }
        if request.output_schema is not None:
            env["HANGAR_OUTPUT_SCHEMA"] = json.dumps(request.output_schema)
        try:
            proc = await asyncio.create_subprocess_exec(
                *self._argv(request.prompt),
                cwd=str(request.folder),
                env=env,
                stdin=asyncio.subprocess.PIPE if self._cfg.prompt_via == "stdin" else asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as exc:
            context_file.unlink(missing_ok=True)
            error = f"the command {self._cfg.argv[0]!r} cannot be started: {exc.strerror or exc}"
            await io.turn_finished(turn, "failed", error)
            return RunResult("failed", error)
        recorded = record_group(request.control_dir, "command", proc.pid) if request.control_dir else None
        try:
            result = await self._drive(proc, request, io, turn, out_file)
        except BaseException:
            await _kill_group(proc)
            raise
        finally:
            if recorded is not None:
                recorded.unlink(missing_ok=True)
            for path in (out_file, context_file):
                with contextlib.suppress(OSError):
                    path.unlink(missing_ok=True)
        return result

    async def _drive(
        self, proc: asyncio.subprocess.Process, req: RunRequest, io: RunIO, turn: int, out_file: Path
    ) -> RunResult:
        assert proc.stdout is not None and proc.stderr is not None
        if proc.stdin is not None:
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                proc.stdin.write(req.prompt.encode())
                await proc.stdin.drain()
            proc.stdin.close()
        stderr_task = asyncio.create_task(proc.stderr.read())
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        text: list[str] = []

        async def pump() -> None:
            assert proc.stdout is not None
            while chunk := await proc.stdout.read(4096):
                piece = decoder.decode(chunk)
                if piece:
                    text.append(piece)
                    await io.text_delta(turn, piece)
            tail = decoder.decode(b"", final=True)
            if tail:
                text.append(tail)
                await io.text_delta(turn, tail)
            await proc.wait()

        try:
            await asyncio.wait_for(pump(), self._cfg.timeout_seconds)
        except asyncio.CancelledError:
            stderr_task.cancel()
            raise
        except TimeoutError:
            await _kill_group(proc)
            stderr_task.cancel()
            error = f"the command did not finish within {self._cfg.timeout_seconds:g} s and was stopped"
            await io.turn_finished(turn, "failed", error)
            return RunResult("failed", error)
        stderr = (await stderr_task).decode(errors="replace")
        stdout = "".join(text)
        if proc.returncode != 0:
            tail = stderr.strip()[-_STDERR_TAIL:] or "(no stderr)"
            error = f"the command exited with status {proc.returncode}: {tail}"
            await io.turn_finished(turn, "failed", error)
            return RunResult("failed", error)
        if stdout.strip():
            await io.reply(turn, stdout.strip())
        if io.output.schema is not None:
            payload = _harvest(out_file, stdout)
            if payload is not _NOTHING:
                io.output.submit(payload)
        await io.turn_finished(turn, "ok")
        return RunResult("ok")


_NOTHING: Any = object()


def _context(req: RunRequest) -> dict[str, Any]:
    agent = req.agent
    return {
        "agent": {"id": agent.id, "name": agent.name, "role": agent.role, "systemPrompt": agent.system_prompt},
        "prompt": req.prompt,
        "history": [
            {"author": {"kind": m.author_kind, "name": m.author_name}, "content": m.content, "own": m.own}
            for m in req.history
        ],
    }


def _harvest(out_file: Path, stdout: str) -> Any:
    """The submitted payload: the output file's JSON, else the last stdout line that is JSON, else nothing."""
    if out_file.exists():
        try:
            return json.loads(out_file.read_text())
        except ValueError:
            return _NOTHING
    for line in reversed(stdout.strip().splitlines()):
        try:
            return json.loads(line)
        except ValueError:
            continue
    return _NOTHING


async def _kill_group(proc: asyncio.subprocess.Process) -> None:
    """End the program and everything it started: SIGTERM to the group, SIGKILL after a grace period."""
    # The group is signalled even when the leader has exited: what it started may still run.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGTERM)
    if proc.returncode is not None:
        return
    try:
        await asyncio.wait_for(proc.wait(), _KILL_GRACE_SECONDS)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        await proc.wait()
