"""The agent runner: dispatches runs, drives their adapters, persists and publishes their turn events,
interrupts them, and reports each finished run as a task (``hangar.pipelines.events.TaskFinished``).

Dispatch records the run, posts the prompt into the space and returns at once; the run proceeds in its own
task. Whatever happens to the far side, the run ends with an outcome and its record, the space and the events
already published stay as they are.

The process driving a run holds its driver lock (``<dataDir>/agents/runs/<runId>/.driver.lock``; see
``hangar.core.runcontrol``, which pipelines use too) from before the run is recorded until its end is, so the
kernel tells every other process whether the driver is alive. A run left ``running`` by a dead process is closed
as ``failed`` by the next process to start (or ``interrupted`` when someone had asked it to stop). Any process can
interrupt a run: the request is a file beside the lock, which the driving process looks for while it drives runs.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, NotRequired, TypedDict, Unpack

import httpx
import sqlalchemy as sa

from hangar.agents import events as ev
from hangar.agents import tables
from hangar.agents.adapters.base import Adapter, HistoryMessage, RunRequest, RunResult
from hangar.agents.adapters.chosen import make_adapter
from hangar.agents.config import OpenAIAdapter
from hangar.agents.live_run import LiveRun
from hangar.agents.runs import Run, RunStatus, RunStore
from hangar.agents.service import Agent, AgentService
from hangar.agents.skills.store import SkillStore
from hangar.agents.tools.builtin import OutputHolder
from hangar.agents.tools.grants import forge_credentials, mcp_grant, product_tools
from hangar.agents.tools.mcp_grant import McpGrant, revoke
from hangar.agents.tools.output_schema import check_schema
from hangar.core.confine import confinement_for
from hangar.core.context import AppContext
from hangar.core.event_types import DomainEvent, StoredEvent
from hangar.core.ids import new_id
from hangar.core.procs import is_alive, this_process
from hangar.core.runcontrol import RunControl
from hangar.errors import Conflict, InvalidArgs, Refused
from hangar.pipelines import TaskFinished, attempts_in_queue
from hangar.workspace import Author, SpaceService

log = logging.getLogger(__name__)

# The error of a run closed because the process driving it died: nothing the agent did ended it.
ABANDONED = "the server stopped during the run"

PROMPT_MAX = 200_000


class DispatchRequest(TypedDict):
    """What ``dispatch`` passes on to ``dispatch_many`` unchanged (the defaults are ``dispatch_many``'s)."""

    space_id: str
    prompt: str
    dispatched_by: str
    prompt_author: Author
    output_schema: NotRequired[dict[str, Any] | None]
    max_turns: NotRequired[int | None]
    agent_field: NotRequired[str]
    prompt_metadata: NotRequired[dict[str, Any] | None]
    attempt_env: NotRequired[Mapping[str, str] | None]
    read_only: NotRequired[bool]
    run_ids: NotRequired[list[str] | None]


class AgentRunner:
    def __init__(self, app: AppContext, agents: AgentService, spaces: SpaceService) -> None:
        self.app = app
        self.agents = agents
        self.spaces = spaces
        self.store = RunStore(app)
        # One pooled client for every run of an endpoint the server owner configured: connections to a model
        # server are reused across turns and runs. A workspace admin's endpoint gets a client of its run's own,
        # with the certificates this one trusts (``hangar.agents.endpoints``).
        self._http = httpx.AsyncClient(limits=httpx.Limits(max_connections=500, max_keepalive_connections=100))
        self._tls = httpx.create_ssl_context()
        self._drivers: dict[str, asyncio.Task[None]] = {}
        self._driven_in: dict[str, str] = {}  # run id -> workspace of the runs driven here
        self._adapters: dict[str, asyncio.Task[RunResult]] = {}
        self._finishing: set[str] = set()
        self._interrupted: set[str] = set()
        self._abandoned: set[str] = set()
        # The runs' driver locks, and the stop requests other processes write for the runs driven here.
        self.control = RunControl(
            app.datadir.root / "agents" / "runs",
            kind="agent run",
            on_stop=self._stop_requested,
            dbs=app.dbs,
            on_fenced=self._fenced,
        )
        self._recovering: asyncio.Task[None] | None = None
        self._owner = this_process()

    def run_dir(self, run_id: str) -> Path:
        return self.control.control_dir(run_id)

    async def publish(self, event: DomainEvent) -> StoredEvent:
        """Publish a run event as the workspace's sole writer of the moment (see ``WorkspaceWrites``)."""
        async with self.spaces.writes.lock(event.workspace_id):
            return await self.app.bus.publish(event)  # the one place this part publishes

    async def dispatch(self, workspace_id: str, *, agent_id: str, **request: Unpack[DispatchRequest]) -> Run:
        """Record a run, post its prompt into the space, and start it; returns the run as recorded."""
        (run,) = await self.dispatch_many(workspace_id, agent_ids=[agent_id], **request)
        return run

    async def dispatch_many(
        self,
        workspace_id: str,
        *,
        agent_ids: list[str],
        space_id: str,
        prompt: str,
        dispatched_by: str,
        prompt_author: Author,
        output_schema: dict[str, Any] | None = None,
        max_turns: int | None = None,
        agent_field: str = "agent_id",
        prompt_metadata: dict[str, Any] | None = None,
        attempt_env: Mapping[str, str] | None = None,
        read_only: bool = False,
        run_ids: list[str] | None = None,
    ) -> list[Run]:
        """One run per agent with the same prompt, posted once into the space (a team dispatch);
        ``prompt_metadata`` is stored on the prompt's message (the chat bridge's ``chat`` stamp); ``attempt_env``
        is added to a command agent's environment (a worker's try keys, ``hangar.agents.bodies.on_worker``);
        ``read_only`` runs read the space's folder and never change it (``Run.read_only``). ``run_ids``: the runs'
        ids, chosen by a caller that must dispatch once whatever happens to it (the chat bridge answering an event
        it may be handed again): a run already recorded under one is a ``Conflict`` and nothing is recorded."""
        if run_ids is not None and len(run_ids) != len(agent_ids):
            raise InvalidArgs("one run id per agent", field="run_ids")
        if not prompt.strip():
            raise InvalidArgs("prompt must not be empty", field="prompt")
        if len(prompt) > PROMPT_MAX:
            raise InvalidArgs(f"prompt is longer than {PROMPT_MAX} characters", field="prompt")
        if output_schema is not None:
            check_schema(output_schema)
        if max_turns is not None and not 1 <= max_turns <= 200:
            raise InvalidArgs("maxTurns must be between 1 and 200", field="maxTurns")
        agents = [await self.agents.get(workspace_id, a, field=agent_field) for a in agent_ids]
        space = await self.spaces.get(workspace_id, space_id)
        if space.archived_at is not None:
            raise Refused(f"space {space_id} is archived; agents cannot be dispatched into it")
        now = self.app.clock.now()
        ids = run_ids or [new_id() for _ in agent_ids]
        runs = [
            Run(
                id=run_id,
                agent_id=agent.id,
                space_id=space_id,
                status=RunStatus.running,
                outcome=None,
                error=None,
                prompt=prompt,
                output_schema=output_schema,
                output=None,
                has_output=False,
                output_error=None,
                turns=0,
                dispatched_by=dispatched_by,
                created_at=now,
                finished_at=None,
                owner=self._owner,
                read_only=read_only,
            )
            for agent, run_id in zip(agents, ids, strict=True)
        ]
        for run_id in run_ids or ():  # a chosen id recorded already: its driver lock is never taken
            if await self.store.find(workspace_id, run_id) is not None:
                raise Conflict(f"run {run_id} is recorded already")
        # Each run's driver lock is held before its row says ``running``: no other process can take it for dead.
        for run in runs:
            await self.control.take(run.id, workspace_id=workspace_id)  # a new id: nobody else knows it yet
        # The runs, their prompt and the events announcing them are recorded in one transaction (the message
        # names the first run); the turn events are written by each run's queue, in order, while the model is
        # being called.
        first_seqs: list[int] = []
        try:
            async with self.spaces.writes.lock(workspace_id), self.app.bus.transaction(workspace_id) as tx:
                await tx.conn.execute(sa.insert(tables.agent_runs).values([r.__dict__ for r in runs]))
                prompt_message = await self.spaces.append(
                    tx, space_id, prompt_author, prompt, metadata=prompt_metadata, run_id=runs[0].id, space=space
                )
                for agent, run in zip(agents, runs, strict=True):
                    started = ev.RunStarted(
                        workspace_id=workspace_id,
                        run_id=run.id,
                        agent_id=agent.id,
                        space_id=space_id,
                        dispatched_by=dispatched_by,
                    )
                    first_seqs.append((await tx.publish(started)).seq)
                    # Recorded now, not only at the end: a process taking the run over reads its events from here.
                    await self.store.update(tx.conn, run.id, first_seq=first_seqs[-1])
        except BaseException as exc:
            for run in runs:
                self._release(run.id)
            if isinstance(exc, sa.exc.IntegrityError) and run_ids is not None:
                raise Conflict("a run with one of these ids was recorded meanwhile") from None
            raise
        for agent, run, first_seq in zip(agents, runs, first_seqs, strict=True):
            live = self.live_run(workspace_id, run, agent, first_seq)
            turns = max_turns or (agent.adapter.max_turns if isinstance(agent.adapter, OpenAIAdapter) else 1)
            self.start_driving(live, run, agent, prompt_message["id"], turns, attempt_env)
        return runs

    def live_run(self, workspace_id: str, run: Run, agent: Agent, first_seq: int | None) -> LiveRun:
        """The ``RunIO`` of one run about to be driven here (its reports become events and messages)."""
        live = LiveRun(
            self.publish,
            self.spaces,
            workspace_id,
            run.id,
            agent,
            run.space_id,
            OutputHolder(run.output_schema),
            product_tools(self.app, workspace_id, run.id, agent, run.space_id, read_only=run.read_only),
            functools.partial(self.app.metrics.model_call, agent.adapter.type),
        )
        live.first_seq = first_seq
        return live

    def start_driving(
        self,
        live: LiveRun,
        run: Run,
        agent: Agent,
        prompt_message_id: str,
        max_turns: int,
        attempt_env: Mapping[str, str] | None = None,
        *,
        adapter: Adapter | None = None,
        interrupted: bool = False,
    ) -> None:
        """Drive ``run`` in a task of its own; its driver lock must be held already (``control.take``).
        ``adapter`` replaces the agent's own (a run taken over whose reply is posted); ``interrupted``: a stop was
        asked before this process took the run, so it ends ``interrupted`` before anything runs."""
        run_id = run.id
        if interrupted:
            self._interrupted.add(run_id)
        self.app.metrics.agent_run(RunStatus.running.value)
        # The driver's task copies this context: its lines carry the request the run was started under.
        log.debug("agent run %s started", run_id, extra={"runId": run_id})
        task = asyncio.get_running_loop().create_task(
            self._drive(live, run, agent, prompt_message_id, max_turns, attempt_env or {}, adapter),
            name=f"agent-run:{run_id}",
        )
        self._drivers[run_id] = task
        self._driven_in[run_id] = live.workspace_id

        def done(_t: object) -> None:
            self._drivers.pop(run_id, None)
            self._driven_in.pop(run_id, None)

        task.add_done_callback(done)

    def driver(self, run_id: str) -> asyncio.Task[None] | None:
        """The task driving ``run_id`` here (it ends once the run's end is recorded), or None."""
        return self._drivers.get(run_id)

    def abandon(self, run_id: str) -> None:
        """Stop driving a run here and record nothing of its end (a worker's claim was fenced: the step's next
        try takes the run over, or a server closes it once the step's attempt is no longer queued)."""
        driver = self._drivers.get(run_id)
        if driver is not None and run_id not in self._finishing:
            self._abandoned.add(run_id)
            driver.cancel()

    def _stop_requested(self, run_id: str) -> bool:
        """Another process asked to interrupt a run this one holds."""
        return run_id in self._drivers and self._interrupt_here(run_id)

    def _interrupt_here(self, run_id: str) -> bool:
        if run_id in self._finishing:  # a run already being recorded as over keeps its own outcome
            return False
        self._interrupted.add(run_id)
        adapter = self._adapters.get(run_id)
        if adapter is not None:
            adapter.cancel()
        # Without an adapter yet, the run sees the flag before it would start one.
        return True

    def _fenced(self, run_id: str) -> None:
        """This process lost the run's lease (its lease connection broke): stop its agent as a stop request
        would; another process may close the run meanwhile, and the first record of its end stands."""
        self._stop_requested(run_id)

    def _release(self, run_id: str) -> None:
        """Give up a run's driver lock once its end is recorded, and remove its directory (lock, stop request)."""
        self.control.release(run_id, ended=True)
        self.control.remove(run_id)

    async def _drive(
        self,
        live: LiveRun,
        run: Run,
        agent: Agent,
        prompt_message_id: str,
        max_turns: int,
        attempt_env: Mapping[str, str],
        adapter: Adapter | None,
    ) -> None:
        workspace_id, run_id, space_id = live.workspace_id, run.id, run.space_id
        prompt, schema = run.prompt, run.output_schema
        output = live.output
        result = RunResult(ev.RunOutcome.failed, "the run ended before it started")
        grant = McpGrant()
        try:
            limit = agent.adapter.history_limit
            recent = await self.spaces.recent(workspace_id, space_id, limit=limit + 1) if limit else []
            # The conversation before this run: its prompt (perhaps not written yet) is added last by the adapter,
            # and what an earlier driver of this run wrote is not part of it.
            earlier = [m for m in recent if m["id"] != prompt_message_id and m["runId"] != run_id]
            recent = earlier[-limit:] if limit else []
            grant = await mcp_grant(self.app, workspace_id, run, agent, attempt_env.get("HANGAR_ATTEMPT_KEY"))
            request = RunRequest(
                workspace_id=workspace_id,
                run_id=run_id,
                space_id=space_id,
                agent=agent,
                prompt=prompt,
                history=tuple(
                    HistoryMessage(
                        m["author"]["kind"],
                        m["author"]["name"],
                        m["content"],
                        m["author"]["kind"] == "agent" and m["author"]["id"] == agent.id,
                    )
                    for m in recent
                ),
                folder=self.spaces.folder(workspace_id, space_id),
                output_schema=schema,
                max_turns=max_turns,
                api_key=self.agents.api_key(workspace_id, agent.id),
                secret_env=self.agents.secret_env(workspace_id, agent),
                control_dir=self.run_dir(run_id),
                confine=lambda: confinement_for(self.app),
                product_env=grant.env,
                product_call_back=grant.call_back,
                credentials=forge_credentials(self.app, run_id, attempt_env.get("HANGAR_ATTEMPT_KEY")),
                attempt_env=attempt_env,
                read_only=run.read_only,
                skills=await SkillStore(self.app).loaded(workspace_id),
            )
            if run_id in self._interrupted:  # interrupted before the adapter started
                raise asyncio.CancelledError
            adapter_task = asyncio.get_running_loop().create_task(
                (adapter or make_adapter(self.app, agent, self._http, self._tls)).run(request, live)
            )
            self._adapters[run_id] = adapter_task
            try:
                result = await asyncio.shield(adapter_task)
            except asyncio.CancelledError:
                # Interrupted (the adapter task was cancelled) or stopping (this task was): either way the
                # adapter must have released its stream or process before the run is recorded as over.
                adapter_task.cancel()
                await asyncio.gather(adapter_task, return_exceptions=True)
                raise
        except asyncio.CancelledError:
            if run_id in self._interrupted:
                result = RunResult(ev.RunOutcome.interrupted, "the run was interrupted")
            else:
                result = RunResult(ev.RunOutcome.interrupted, "the run was stopped because the server is shutting down")
        except Exception as exc:
            log.exception("agent run %s failed inside Hangar", run_id)
            # The exception text may hold anything (paths, values): it goes to the log, the run says where.
            error = f"the run failed inside Hangar ({type(exc).__name__}); see the server log"
            result = RunResult(ev.RunOutcome.failed, error)
        finally:
            self._adapters.pop(run_id, None)
            if run_id in self._abandoned:
                await asyncio.shield(self._let_go(run_id, live, grant))
            else:
                self._finishing.add(run_id)
                try:
                    await asyncio.shield(
                        self._finish(workspace_id, run_id, agent, space_id, live, output, result, grant)
                    )
                finally:
                    self._finishing.discard(run_id)
                    self._release(run_id)

    async def _let_go(self, run_id: str, live: LiveRun, grant: McpGrant) -> None:
        """An abandoned run: its credential dies, its reports already made are written, its lock goes; its end is
        not recorded (whoever takes it over records that)."""
        try:
            await revoke(self.app, grant)
            await live.aclose()
        finally:
            self._abandoned.discard(run_id)
            self.control.release(run_id)

    async def _finish(
        self,
        workspace_id: str,
        run_id: str,
        agent: Agent,
        space_id: str,
        live: LiveRun,
        output: OutputHolder,
        result: RunResult,
        grant: McpGrant,
    ) -> None:
        await revoke(self.app, grant)  # the run's credential dies with it, however it ended
        self.app.metrics.agent_run(result.outcome.value)
        log.debug("agent run %s %s", run_id, result.outcome.value, extra={"runId": run_id})
        if live.open_turn is not None:
            await live.turn_finished(live.open_turn, result.outcome, result.error)
        await live.flush()
        await live.aclose()
        output_error = None
        if output.schema is not None and not output.accepted:
            output_error = output.last_error or "the agent did not call submit_output"
        async with self.spaces.writes.lock(workspace_id), self.app.bus.transaction(workspace_id) as tx:
            await self.store.update(
                tx.conn,
                run_id,
                status=RunStatus.finished,
                outcome=result.outcome,
                error=result.error,
                output=output.value if output.accepted else None,
                has_output=output.accepted,
                output_error=output_error,
                turns=live.turns,
                finished_at=self.app.clock.now(),
                first_seq=live.first_seq,
            )
            await tx.publish(
                ev.RunFinished(
                    workspace_id=workspace_id,
                    run_id=run_id,
                    agent_id=agent.id,
                    space_id=space_id,
                    outcome=result.outcome,
                    error=result.error,
                    has_output=output.accepted,
                )
            )
            await tx.publish(_task_finished(workspace_id, run_id, result, output))
        self._interrupted.discard(run_id)

    async def interrupt(self, workspace_id: str, run_id: str, *, by: str = "hangar") -> Run:
        """Stop a running run (outcome ``interrupted``) and return it once it is over, whichever process drives
        it; a finished run is returned as it is."""
        if self._driven_in.get(run_id) == workspace_id:
            # Driven here: flagged before anything is awaited, so a run interrupted right after its dispatch
            # never gets as far as calling the model.
            return await self._interrupt_driven_here(workspace_id, run_id)
        run = await self.store.get(workspace_id, run_id)
        if run.status is not RunStatus.running:
            return run
        if self._driven_in.get(run_id) == workspace_id:  # it started driving here while the row was read
            return await self._interrupt_driven_here(workspace_id, run_id)
        # Driven by another process (or by none, if it died): ask, then wait for the run to be over.

        async def ended() -> bool:
            nonlocal run
            run = await self.store.get(workspace_id, run_id)
            return run.status is not RunStatus.running

        try:
            await self.control.stop(
                run_id,
                by=by,
                at=self.app.clock.now(),
                stop_here=lambda: self._close_if_abandoned(workspace_id, run),
                ended=ended,
                workspace_id=workspace_id,
            )
        finally:
            if run.status is not RunStatus.running:  # it ended elsewhere: what is left of its directory goes
                self.control.remove(run_id)
        return run if run.status is not RunStatus.running else await self.store.get(workspace_id, run_id)

    async def _interrupt_driven_here(self, workspace_id: str, run_id: str) -> Run:
        driver = self._drivers.get(run_id)
        self._interrupt_here(run_id)
        if driver is not None:
            await asyncio.gather(asyncio.shield(driver), return_exceptions=True)
        return await self.store.get(workspace_id, run_id)

    async def _close_if_abandoned(self, workspace_id: str, run: Run) -> bool:
        """Close a ``running`` run whose driver is gone: nobody holds its lock and its recorded owner process is
        dead (or is this one, which does not drive it). ``interrupted`` when a stop was requested, else
        ``failed``. Returns whether this call closed it."""
        if run.id in self._drivers or self.control.holds(run.id):
            return False
        if not self.control.in_database and run.owner != self._owner and is_alive(run.owner):
            # Recorded by a live process (before driver locks). On PostgreSQL the lease alone says: the owner's
            # pid may be a process of another host.
            return False
        # Taking the lock kills the agent's command the dead driver left running (if any).
        took = await self.control.try_take_abandoned(run.id, workspace_id=workspace_id)
        if took is None:
            return False  # a live process drives it (or may: its lease has not been free long enough)
        try:
            if took.stop_requested:
                result = RunResult(
                    ev.RunOutcome.interrupted, "the run was interrupted after the process driving it stopped"
                )
            else:
                result = RunResult(ev.RunOutcome.failed, ABANDONED)
            async with self.spaces.writes.lock(workspace_id), self.app.bus.transaction(workspace_id) as tx:
                closed = await self.store.close_running(
                    tx.conn, run.id, outcome=result.outcome, error=result.error, finished_at=self.app.clock.now()
                )
                if not closed:
                    return False  # it ended meanwhile
                await tx.publish(
                    ev.RunFinished(
                        workspace_id=workspace_id,
                        run_id=run.id,
                        agent_id=run.agent_id,
                        space_id=run.space_id,
                        outcome=result.outcome,
                        error=result.error,
                    )
                )
                await tx.publish(_task_finished(workspace_id, run.id, result, OutputHolder(None)))
            return True
        finally:
            self._release(run.id)

    async def recover(self, workspace_id: str) -> int:
        """Close runs a dead process left running (never one a live process drives); returns how many. A run a
        worker drove for a pipeline step whose attempt is still queued is left to that attempt's next try, which
        takes it over (``hangar.agents.bodies.on_worker``)."""
        closed = 0
        running = await self.store.running(workspace_id)
        queued: set[str] = set()
        if self.app.dbs.on_postgresql and running:
            queued = await attempts_in_queue(self.app.dbs.server, workspace_id, (r.dispatched_by for r in running))
        for run in running:
            if run.dispatched_by in queued:
                continue
            if await self._close_if_abandoned(workspace_id, run):
                closed += 1
        return closed

    def recover_every(self, interval: float, workspaces: Callable[[], Awaitable[list[str]]]) -> None:
        """Also ``recover`` every ``interval`` seconds while the process runs (servers sharing a PostgreSQL
        database: a run whose server died is closed by another within that, its lease gone with the server)."""

        async def loop() -> None:
            while True:
                await asyncio.sleep(interval)
                for workspace_id in await workspaces():
                    try:
                        await self.recover(workspace_id)
                    except Exception:
                        log.exception("agents: could not close the abandoned runs of %s", workspace_id)

        self._recovering = asyncio.get_running_loop().create_task(loop(), name="agents:recover")

    @property
    def busy(self) -> bool:
        """Whether a run is live in this process."""
        return bool(self._drivers)

    async def wait_idle(self) -> None:
        """Until no run is live in this process (in-process commands wait on it before they exit, since
        leaving would interrupt the runs their suspended steps wait for)."""
        while self._drivers:
            await asyncio.gather(*list(self._drivers.values()), return_exceptions=True)

    async def aclose(self) -> None:
        """Stop every live run (each ends ``interrupted``) and close the HTTP pool; safe twice."""
        if self._recovering is not None:
            self._recovering.cancel()
            await asyncio.gather(self._recovering, return_exceptions=True)
            self._recovering = None
        drivers = list(self._drivers.values())
        for task in drivers:
            task.cancel()
        await asyncio.gather(*drivers, return_exceptions=True)
        await self.control.aclose()
        await self._http.aclose()


def _task_finished(workspace_id: str, run_id: str, result: RunResult, output: OutputHolder) -> TaskFinished:
    """What tells the pipelines engine the task (this run) is over, with the harvested output."""
    payload: Any = output.value if output.accepted else None
    return TaskFinished(workspace_id=workspace_id, task_id=run_id, outcome=result.outcome, output=payload)
