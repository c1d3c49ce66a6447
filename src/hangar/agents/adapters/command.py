"""The ``command`` adapter: a command-line agent run confined, in an enclosure of the run's own.

The program runs confined (``hangar.core.confine``): in an enclosure of the run's own, started for it and
closed when it ends, with the space's working folder mounted as the program's working directory; as the rig
user, with the terminal's egress allowlist, no view of the data directory or the host, and an environment
holding only the adapter's configured variables, the agent's secrets and the contract below, never the
server's. No other run, agent or setup script shares its processes, its PID namespace or its enclosure's own
files (its home, /tmp): the agent's secrets and the run's credential reach its program alone. What runs in a
space shares the space's folder only. ``argv[0]`` is looked up on the enclosure's PATH. A read-only run
(``RunRequest.read_only``: a step with ``readOnlyWorktree``) gets the folder mounted read-only, so every write in it
fails with EROFS; a confinement that cannot mount it so (trusted host execution) fails the run, naming the setting,
rather than run the program where nothing stops its writes.

The prompt goes to stdin (``promptVia: stdin``) or into argv (``promptVia: arg``: replaces a ``{prompt}``
element, else is appended). Stdout is relayed as text deltas while the program runs, and posted whole as the
agent's reply when it exits 0. While the turn waits for its enclosure (a first start builds the terminal image;
then the boot), each step is a ``TurnWaiting`` event; a wait that fails (the image's build) fails the turn with the
reason, and running the agent again tries again. Whatever the program leaves running is killed when it exits; an
interrupt (or the timeout) ends the program and everything it started.

Input contract: the environment carries ``HANGAR_RUN_ID``, ``HANGAR_SPACE_ID``, ``HANGAR_WORKSPACE_ID``,
``HANGAR_CONTEXT_FILE`` and ``HANGAR_OUTPUT_FILE`` (paths as the program sees them); with an output schema
also ``HANGAR_OUTPUT_SCHEMA``; ``HANGAR_MCP_URL`` and ``HANGAR_MCP_TOKEN`` (the product's MCP endpoint as the
program reaches it, through the enclosure's server door, and a credential for this run,
``hangar.agents.tools.mcp_grant``), or ``HANGAR_MCP_UNAVAILABLE`` saying why not; with ``forgeRepos``, a
short-lived forge token for those repos (``GH_TOKEN``, ``GITHUB_TOKEN``, ``GH_HOST``, a git credential helper:
``hangar.core.brokering``), ended with the run and redacted like the secrets, the run failing with the reason when
none can be had. The context
file is a JSON document with what a chat-completions agent would be given: the agent (id, name, role, system
prompt), the prompt, and the space's recent messages oldest first (author kind and name, content, ``own`` when
this agent wrote it), so a command-line agent can hold a conversation instead of seeing one prompt. Both
files live in a directory of the run's own enclosure (``Confinement.files_seen``), never in the space's shared
folder, so no other run reads the context or writes the output; they go with the enclosure when the run ends.

Output contract: A program that writes a JSON document to ``$HANGAR_OUTPUT_FILE`` submits it (the
command-line equivalent of ``submit_output``); otherwise the last stdout line that parses as JSON is
submitted. The output file is read without following symlinks, up to ``core.confine.MAX_RESULT_FILE`` bytes.
"""

from __future__ import annotations

import codecs
import contextlib
import json
from typing import Any

from hangar.agents.adapters.base import Adapter, RunIO, RunRequest, RunResult
from hangar.agents.config import CommandAdapter
from hangar.agents.events import RunOutcome
from hangar.agents.tools.mcp_grant import TOKEN_VAR
from hangar.core.brokering import BrokeredEnv, CredentialSource
from hangar.core.confine import Confinement, ExecResult, Job, Scope, Wait, run_alone
from hangar.core.redact import Redactor
from hangar.errors import HangarError

_STDERR_TAIL = 2000
NOT_STARTED = 127  # the exit status of a program that was not found or could not be executed


def agent_run_key(run_id: str) -> str:
    """One agent run's enclosure: its secrets and its run credential meet no other run's processes or files."""
    return f"agentRun:{run_id}"


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
        try:
            confinement = await request.confine()
        except HangarError as exc:
            await io.turn_finished(turn, RunOutcome.failed, exc.message)
            return RunResult(RunOutcome.failed, exc.message)
        if request.read_only and not confinement.mounts_read_only:
            error = (
                f"this agent step is read-only (readOnlyWorktree), and programs run here by {confinement.where} "
                f"execution, which cannot mount the space's folder read-only: the command was not run (run it in an "
                f"enclosure, or drop readOnlyWorktree from the step)"
            )
            await io.turn_finished(turn, RunOutcome.failed, error)
            return RunResult(RunOutcome.failed, error)
        scope = Scope(agent_run_key(request.run_id), request.workspace_id, request.folder, request.control_dir,
                      space_id=request.space_id, read_only=request.read_only)  # fmt: skip
        async with contextlib.AsyncExitStack() as stack:
            brokered = BrokeredEnv()
            if self._cfg.forge_repos:
                source = request.credentials or CredentialSource()
                try:
                    brokered = await stack.enter_async_context(
                        source.environment(request.workspace_id, self._cfg.forge_repos, confinement, scope)
                    )
                except HangarError as exc:  # refused: no forge, a repo not linked, a host it cannot reach
                    error = f"no forge token for the command: {exc.message}"
                    await io.turn_finished(turn, RunOutcome.failed, error)
                    return RunResult(RunOutcome.failed, error)
            return await self._run(request, io, turn, confinement, scope, brokered)
        raise AssertionError("unreachable")  # mypy: AsyncExitStack may swallow exceptions

    async def _run(
        self,
        request: RunRequest,
        io: RunIO,
        turn: int,
        confinement: Confinement,
        scope: Scope,
        brokered: BrokeredEnv,
    ) -> RunResult:
        """The program's one turn, with ``brokered``'s forge credentials (ended when the caller's block ends)."""
        seen = confinement.files_seen(scope)
        out_name, context_name = f".hangar-output-{request.run_id}.json", f".hangar-context-{request.run_id}.json"
        env = {
            **self._cfg.env,
            **request.secret_env,
            **request.product_env,
            **brokered.env,
            **request.attempt_env,
            "HANGAR_RUN_ID": request.run_id,
            "HANGAR_SPACE_ID": request.space_id,
            "HANGAR_WORKSPACE_ID": request.workspace_id,
            "HANGAR_OUTPUT_FILE": f"{seen}/{out_name}",
            "HANGAR_CONTEXT_FILE": f"{seen}/{context_name}",
        }
        if request.output_schema is not None:
            env["HANGAR_OUTPUT_SCHEMA"] = json.dumps(request.output_schema)
        job = Job(
            tuple(self._argv(request.prompt)),
            env,
            stdin=request.prompt.encode() if self._cfg.prompt_via == "stdin" else None,
            timeout_s=self._cfg.timeout_seconds,
            group_name="command",
            files={context_name: json.dumps(_context(request), ensure_ascii=False).encode()},
            results=(out_name,),
            call_back=request.product_call_back,
        )
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        # The agent's secrets and its run credential; the endpoint's address is no secret.
        secrets = [*request.secret_env.values(), request.product_env.get(TOKEN_VAR, ""), *brokered.secrets]
        redactor = Redactor(secrets)

        async def relay(chunk: bytes) -> None:
            if piece := redactor.feed(decoder.decode(chunk)):
                await io.text_delta(turn, piece)

        async def waiting(wait: Wait) -> None:
            await io.waiting(turn, wait)

        try:
            done = await run_alone(confinement, scope, job, relay, waiting)
        except HangarError as exc:  # the enclosure could not be had: the image's build failed, the budget is full
            error = f"the command could not run: {exc.message}"
            await io.turn_finished(turn, RunOutcome.failed, error)
            return RunResult(RunOutcome.failed, error)
        if tail := redactor.feed(decoder.decode(b"", final=True)) + redactor.flush():
            await io.text_delta(turn, tail)
        return await self._finish(done, io, turn, done.files.get(out_name), redactor, Redactor.encoded(secrets))

    async def _finish(
        self,
        done: ExecResult,
        io: RunIO,
        turn: int,
        out_file: bytes | None,
        redactor: Redactor,
        submitted: Redactor,
    ) -> RunResult:
        if done.timed_out:
            error = f"the command did not finish within {self._cfg.timeout_seconds:g} s and was stopped"
        elif done.exit_code == NOT_STARTED and not done.stdout:
            tail = redactor.clean(done.stderr).strip()[-_STDERR_TAIL:] or "not found"
            error = f"the command {self._cfg.argv[0]!r} cannot be started: {tail}"
        elif done.exit_code != 0:
            tail = redactor.clean(done.stderr).strip()[-_STDERR_TAIL:] or "(no stderr)"
            error = f"the command exited with status {done.exit_code}: {tail}"
        else:
            error = ""
        if error:
            await io.turn_finished(turn, RunOutcome.failed, error)
            return RunResult(RunOutcome.failed, error)
        stdout = redactor.clean(done.stdout)
        if stdout.strip():
            await io.reply(turn, stdout.strip())
        if io.output.schema is not None:
            payload = harvest_output(out_file, stdout)
            if payload is not NOTHING:
                # What it submits becomes state a later step may send out (a review posted on the forge): its
                # secrets are blanked there too, also encoded (``Redactor.encoded``).
                io.output.submit(submitted.clean_json(payload))
        await io.turn_finished(turn, RunOutcome.ok)
        return RunResult(RunOutcome.ok)


NOTHING: Any = object()  # what ``harvest_output`` returns when nothing was submitted


def _context(req: RunRequest) -> dict[str, Any]:
    agent = req.agent
    return {
        "agent": {"id": agent.id, "name": agent.name, "role": agent.role, "systemPrompt": agent.system_prompt},
        "prompt": req.prompt,
        "skills": [{"name": k.name, "digest": k.digest, "instructions": k.instructions} for k in req.skills],
        "history": [
            {"author": {"kind": m.author_kind, "name": m.author_name}, "content": m.content, "own": m.own}
            for m in req.history
        ],
    }


def harvest_output(out_file: bytes | None, stdout: str) -> Any:
    """The submitted payload: the output file's JSON, else the last stdout line that is JSON, else nothing."""
    if out_file is not None:
        try:
            return json.loads(out_file)
        except ValueError:
            return NOTHING
    for line in reversed(stdout.strip().splitlines()):
        try:
            return json.loads(line)
        except ValueError:
            continue
    return NOTHING
