"""The rig manager: the life of rigs and what agents and people do with them (exec, terminal and watch lanes,
take-over, sharing ports). Other parts find it as ``ctx.service(RigManager)``.

It codes against ``RigBackend`` only (whichever backend the part start hands it) and keeps the lifecycle rules in
``hangar.rigs.policy`` (pure), the rows in ``hangar.rigs.store``. ``RigManager`` holds the start and stop, finding
and listing rigs, and the actions, and is composed of the parts that do the work, each handed the shared
``LiveRigs`` and what else it needs: ``opening.RigOpener`` (reuse, provisioning, booting), ``upkeep.RigUpkeep``
(the sweep, the memory budget, parking and waking, ports), ``closing.RigCloser`` (every way a rig ends) and the
dev-domain router (``hangar.rigs.devdomains.router.DevRouter``). Callers open and close through those parts
(``opener.open``, ``closer.close``); the sweep, measuring, port polling and the budget, which this runs
periodically, stay here.

Phases move like this (``closing`` then ``closed`` for every close reason):

    provisioning ──boot ok──▶ ready ◀──next action── parked
         │                      └──idle one window──▶ ┘
         └──boot failed──▶ failed          (process died underneath any live phase ──▶ failed)

Live state (handles, lanes, in-flight actions, forwards) is in memory; every phase change is written to
``rig_sessions`` so ``rig_list`` and the audit trail survive the process. Rows a previous process left live
whose process died (nobody holds their claim, ``ownership``) are closed with ``serverShutdown`` at start and at
each sweep; rows another live process runs are left to it.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import shutil
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

from hangar.core.context import AppContext
from hangar.core.events import Subscription
from hangar.core.principal import Principal
from hangar.errors import HangarError, NotFound, Refused
from hangar.identity import usable_workspace_ids
from hangar.rigs import hooks
from hangar.rigs.backends.base import ExecResult, RigBackend, RigHandle
from hangar.rigs.backends.fullvm.backend import KvmBackend, TcgBackend
from hangar.rigs.backends.kvmprobe import KvmProbe
from hangar.rigs.devdomains.router import DevRouter
from hangar.rigs.errors import BackendFailure, ControlHeld
from hangar.rigs.events import RigDevDomainChanged
from hangar.rigs.hosts.registry import RigHosts
from hangar.rigs.lifecycle.backendchoice import asks_vm
from hangar.rigs.lifecycle.budget import MemoryBudget
from hangar.rigs.lifecycle.closing import RigCloser, discard_home
from hangar.rigs.lifecycle.control import RigControl
from hangar.rigs.lifecycle.foldlog import FOLDED_VERBS, Run, ScreenshotFold
from hangar.rigs.lifecycle.holder import refuse_if_elsewhere
from hangar.rigs.lifecycle.opening import RigOpener, rig_home
from hangar.rigs.lifecycle.ownership import RigOwnership
from hangar.rigs.lifecycle.upkeep import RigUpkeep
from hangar.rigs.live.notices import ExecNotice, ExecResultNotice, RigNotice
from hangar.rigs.live.rigs import LiveRig, LiveRigs
from hangar.rigs.model import DEFAULT_MEMORY_BUDGET_MB, PORT_POLL_INTERVAL_S, CloseReason, Phase, RigRecord, Surface
from hangar.rigs.store import RigStore

log = logging.getLogger(__name__)

WATCH_QUEUE = 1000  # events a watcher may fall behind by before it loses some
WATCH_OUTPUT_CHARS = 64 * 1024  # the tail of each output stream a watcher is shown

SWEEP_INTERVAL_S = 30.0

__all__ = ["RigManager"]


class RigManager:
    def __init__(
        self,
        app: AppContext,
        backend: RigBackend,
        *,
        budget_mb: int = DEFAULT_MEMORY_BUDGET_MB,
        hosts: RigHosts | None = None,
        surface_backends: Mapping[Surface, RigBackend] | None = None,
    ) -> None:
        self.app = app
        self.backend = backend
        self.surface_backends = dict(surface_backends or {})  # surfaces another backend runs (phones)
        self.hosts = hosts
        self.store = RigStore(app.dbs, app.clock)
        self.rigs = LiveRigs(app.clock)
        self.ownership = RigOwnership(app, self._fenced)
        self.control = RigControl(app, self.store, self.rigs)
        self.closer = RigCloser(app, self.store, self.rigs, self.ownership, self.control)
        self.budget = MemoryBudget(app, self.rigs, self.closer, budget_mb=budget_mb)
        self.upkeep = RigUpkeep(app, self.store, self.rigs, self.closer, self.budget)
        self.dev = DevRouter(app, self.reach)  # dev domains: lanes, resolver names, the HTTPS leaf
        # Screenshot runs not yet written (``foldlog``); a rig's close row comes after them.
        self.folds = ScreenshotFold(app.clock, app.settings.rig_screenshot_fold_seconds)
        self.closer.before_end = self.flush_folds
        self.kvm = KvmProbe()  # whether full VMs could run under KVM here, found once, never waited on forever
        root = app.datadir.sub("rigs")  # full VMs' images and run directories
        self.opener = RigOpener(
            app,
            backend,
            self.store,
            self.rigs,
            self.upkeep,
            self.closer,
            self.ownership,
            prepare_ready=self._prepare_ready,
            hosts=hosts,
            surface_backends=self.surface_backends,
            vm_backends={vm.name: vm for vm in (KvmBackend(root, self.kvm), TcgBackend(root, self.kvm))},
            kvm=self.kvm,
        )
        self._tasks: list[asyncio.Task[None]] = []
        self._subs: list[Subscription] = []

    @property
    def budget_mb(self) -> int:
        """The memory budget as last read (``MemoryBudget.current_mb`` reads it afresh)."""
        return self.budget.budget_mb

    @budget_mb.setter
    def budget_mb(self, value: int) -> None:
        """This process's budget where the server setting is not set (tests, and the op after storing it)."""
        self.budget.configured_mb = self.budget.budget_mb = value

    async def _prepare_ready(self, live: LiveRig, handle: RigHandle) -> str | None:
        """Browser rigs get the dev-domain lanes and their space's names before anything runs in them."""
        if live.surface is not Surface.browser:
            return None
        try:
            status = await self.dev.attach(live)
        except HangarError as exc:
            log.warning("rigs: dev-domain lanes of %s not started: %s", live.id, exc.message)
            return f"dev domains unavailable in this rig: {exc.message}"
        return None if status.https else f"no HTTPS dev-domain lane: {status.https_reason}"

    # -- start and stop -----------------------------------------------------------------------------------

    async def start(self) -> None:
        self.app.metrics.watch_rigs(self._counts)
        await self.budget.current_mb()
        await self._close_leftovers()
        # Drops spooled by a process that died mid-upload never landed; nothing else reads them.
        await asyncio.to_thread(shutil.rmtree, self.app.datadir.root / "rigs" / "spool", True)
        self._subs.append(
            self.app.bus.subscribe(self.closer.on_ending_event, name="rigs:endings", types=hooks.ENDING_EVENT_TYPES)
        )
        self._subs.append(
            self.app.bus.subscribe(self.dev.on_event, name="rigs:devDomains", types=(RigDevDomainChanged.type,))
        )
        self._tasks.append(asyncio.create_task(self._loop(SWEEP_INTERVAL_S, self.sweep), name="rigs:sweep"))
        self._tasks.append(asyncio.create_task(self._loop(PORT_POLL_INTERVAL_S, self.poll_ports), name="rigs:ports"))

    def _counts(self) -> dict[tuple[str, str], int]:
        """The live rigs by surface and phase (``hangar_rigs``, read at each scrape)."""
        return dict(collections.Counter((r.surface.value, r.phase.value) for r in self.rigs.all()))

    async def stop(self) -> None:
        self.closer.stopping = True
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()
        for sub in self._subs:
            await self.app.bus.unsubscribe(sub)
        self._subs.clear()
        await self._write_runs(self.folds.all())  # before closing writes anything of its own
        await self.closer.close_all(CloseReason.server_shutdown)
        await self.ownership.aclose()
        await self.backend.aclose()
        for other in self.surface_backends.values():
            await other.aclose()

    async def _close_leftovers(self) -> None:
        """Close the live rows whose rig died with its process: rows no live process claims
        (``hangar.rigs.lifecycle.ownership``). A rig another live process runs (a second server, a ``hangar``
        command on the same data directory or database) is left alone."""
        for ws in await usable_workspace_ids(self.app):
            for rec in await self.store.rigs(ws):
                if self.rigs.find(ws, rec.id) is not None or not await self.ownership.orphaned(ws, rec.id):
                    continue
                try:
                    await self.store.update(
                        ws,
                        rec.id,
                        phase=Phase.closed,
                        close_reason=CloseReason.server_shutdown,
                        status_detail="the server stopped before closing it",
                        closed_at=self.app.clock.now(),
                    )
                    await discard_home(self.app, rig_home(self.app, rec.id))
                    if asks_vm(rec.backend):  # its QEMU died with its server; its overlay is left to remove
                        await asyncio.to_thread(shutil.rmtree, self.app.datadir.root / "rigs" / "run" / rec.id, True)
                    if self.hosts is not None:  # a rig its dead server placed on a rig host holds no room there now
                        await self.hosts.ended(rec.id)
                finally:
                    self.ownership.release(rec.id)

    async def _fenced(self, rig_id: str) -> None:
        for live in self.rigs.all():
            if live.id == rig_id:
                await self.closer.close_live(live, CloseReason.server_shutdown)

    async def _loop(self, interval: float, step: Callable[[], Awaitable[None]]) -> None:
        while True:
            await self.app.clock.sleep(interval)
            try:
                await step()
            except Exception:
                log.exception("rigs: periodic %s failed", getattr(step, "__name__", step))

    # -- the periodic work, also run on demand (an op, a test) --------------------------------------------

    async def sweep(self) -> None:
        """Carry out the lifecycle rules now (``RigUpkeep.sweep``), and close the rows of rigs that died with
        another process since the last look."""
        await self.upkeep.sweep()
        await self._close_leftovers()
        await self._write_runs(self.folds.lapsed())

    async def measure(self) -> None:
        await self.upkeep.measure()

    async def poll_ports(self) -> None:
        await self.upkeep.poll_ports()

    # -- finding and listing rigs -------------------------------------------------------------------------

    def live(self, ws: str, rig_id: str) -> LiveRig:
        return self.rigs.live(ws, rig_id)

    async def get_live(self, ws: str, rig_id: str) -> LiveRig:
        """The live rig, or a clear error saying why there is none (unknown, closed, failed)."""
        live = self.rigs.find(ws, rig_id)
        if live is not None:
            return live
        rec = await self.store.get(ws, rig_id)
        if rec is None:
            raise NotFound(f"no rig {rig_id} in this workspace")
        refuse_if_elsewhere(rec, self.app.settings.serving_origin)
        reason = f" ({rec.close_reason.value})" if rec.close_reason else ""
        raise NotFound(f"rig {rig_id} is {rec.phase.value}{reason}; open a new one")

    async def log_action(
        self, ws: str, rig_id: str, principal: Principal | str, verb: str, details: dict[str, Any], outcome: str = "ok"
    ) -> int:
        """Append one row to the rig's action log, after the screenshot runs it held for the rig (``foldlog``)."""
        label = principal if isinstance(principal, str) else principal.label
        await self.flush_folds(ws, rig_id)
        return await self.store.append_action(ws, rig_id, principal=label, verb=verb, outcome=outcome, details=details)

    async def log_observation(
        self, ws: str, rig_id: str, principal: Principal, verb: str, details: dict[str, Any], outcome: str
    ) -> None:
        """Log a read-only verb: a successful screenshot is counted into its principal's run on the rig
        (``foldlog``); anything else is a row of its own."""
        if verb not in FOLDED_VERBS or outcome != "ok":
            await self.log_action(ws, rig_id, principal, verb, details, outcome)
            return
        ended = self.folds.add(ws, rig_id, principal.label, verb, details)
        if ended is not None:
            await self._write_run(ws, rig_id, ended)

    async def flush_folds(self, ws: str, rig_id: str) -> None:
        """Write the rig's held screenshot runs now (before another row, or before the log is read)."""
        for run in self.folds.take(ws, rig_id):
            await self._write_run(ws, rig_id, run)

    async def _write_runs(self, runs: list[tuple[str, str, Run]]) -> None:
        """Write held runs, each on its own: one that cannot be written (its workspace gone) is logged, and the
        others, and whatever the caller does next (the shutdown), still happen."""
        for ws, rig_id, run in runs:
            try:
                await self._write_run(ws, rig_id, run)
            except Exception:
                log.exception("rigs: screenshot run of %s on %s not written", run.principal, rig_id)

    async def _write_run(self, ws: str, rig_id: str, run: Run) -> None:
        await self.store.append_action(
            ws, rig_id, principal=run.principal, verb=run.verb, details=run.row_details(), at=run.first_at
        )

    async def records(self, ws: str, *, include_closed: bool) -> list[tuple[RigRecord, LiveRig | None]]:
        return [(rec, self.rigs.get(rec.id)) for rec in await self.store.rigs(ws, include_closed=include_closed)]

    async def record(self, ws: str, rig_id: str) -> tuple[RigRecord, LiveRig | None]:
        """One rig's record and, while it lives, its live state; looking does not touch it."""
        rec = await self.store.get(ws, rig_id)
        if rec is None:
            raise NotFound(f"no rig {rig_id} in this workspace")
        return rec, self.rigs.find(ws, rig_id)

    def live_rigs(self) -> list[LiveRig]:
        return self.rigs.all()

    # -- acting on a rig -------------------------------------------------------------------------------

    async def reach(self, ws: str, rig_id: str) -> RigHandle:
        """The handle of a rig of this process that traffic is routed to (a dev domain's target): woken when
        parked, and the traffic counts as its activity. ``Elsewhere`` when another server runs it, ``NotFound``
        when it does not run."""
        live = await self.get_live(ws, rig_id)
        handle = await self.upkeep.awake(live)
        self.rigs.touch(live)
        return handle

    def check_control(self, live: LiveRig, principal: Principal, what: str) -> None:
        if live.controller is not None and live.controller != principal.user_id:
            raise ControlHeld(f"{what} refused: a person holds control of rig {live.id}; observations stay allowed")

    @contextlib.asynccontextmanager
    async def acting(
        self, ws: str, rig_id: str, principal: Principal, *, mutating: bool, what: str
    ) -> AsyncIterator[tuple[LiveRig, RigHandle]]:
        """Run one action on a rig: take-over checked, booted, woken, pinned while it runs."""
        live = await self.get_live(ws, rig_id)
        if mutating:
            self.check_control(live, principal, what)
        live.busy += 1
        try:
            handle = await self.upkeep.awake(live)
            self.rigs.touch(live, principal)
            try:
                yield live, handle
            except HangarError:
                raise
            except Exception as exc:
                log.exception("rigs: %s on %s failed", what, rig_id)
                raise BackendFailure(f"{what} failed inside rig {rig_id}") from exc
        finally:
            live.busy -= 1
            self.rigs.touch(live)

    async def exec(
        self, ws: str, rig_id: str, command: str, timeout_s: float | None, principal: Principal
    ) -> ExecResult:
        async with self.acting(ws, rig_id, principal, mutating=True, what="rig.exec") as (live, handle):
            live.notify(ExecNotice(by=principal.label, command=command))
            result = await handle.exec(command, timeout_s=timeout_s)
            live.notify(
                ExecResultNotice(
                    exit_code=result.exit_code,
                    timed_out=result.timed_out,
                    stdout=result.stdout[-WATCH_OUTPUT_CHARS:],
                    stderr=result.stderr[-WATCH_OUTPUT_CHARS:],
                )
            )
        await self.log_action(
            ws,
            rig_id,
            principal,
            "exec",
            {
                "command": hooks.sensitive(command),
                "exitCode": result.exit_code,
                "timedOut": result.timed_out,
                "stdoutBytes": len(result.stdout.encode()),
                "stderrBytes": len(result.stderr.encode()),
            },
        )
        return result

    @contextlib.asynccontextmanager
    async def lane(self, ws: str, rig_id: str) -> AsyncIterator[LiveRig]:
        """An open terminal or watch lane: pins the rig against parking, idle reaping and eviction."""
        live = await self.get_live(ws, rig_id)
        live.lanes += 1
        try:
            yield live
        finally:
            live.lanes -= 1
            self.rigs.touch(live)

    @contextlib.asynccontextmanager
    async def watch(self, ws: str, rig_id: str) -> AsyncIterator[tuple[LiveRig, asyncio.Queue[RigNotice]]]:
        """A watch lane: the rig's activity as events (phases, commands and results, control, ports); it pins
        the rig like a terminal does."""
        queue: asyncio.Queue[RigNotice] = asyncio.Queue(maxsize=WATCH_QUEUE)
        async with self.lane(ws, rig_id) as live:
            live.watchers.add(queue)
            try:
                yield live, queue
            finally:
                live.watchers.discard(queue)

    # -- take-over ----------------------------------------------------------------------------------------

    async def take_control(self, ws: str, rig_id: str, principal: Principal) -> LiveRig:
        live = await self.get_live(ws, rig_id)
        if live.controller == principal.user_id:
            return live
        if live.controller is not None:
            raise ControlHeld(f"rig {rig_id} is already controlled by another person; they must hand it back")
        await self.control.set(
            live,
            by_user=principal.user_id,
            by_label=principal.label,
            user_id=principal.user_id,
            verb="takeControl",
            details={},
        )
        return live

    async def release_control(self, ws: str, rig_id: str, principal: Principal, *, force: bool) -> LiveRig:
        live = await self.get_live(ws, rig_id)
        if live.controller is None:
            return live
        if live.controller != principal.user_id and not force:
            raise ControlHeld(f"only the person holding rig {rig_id} (or a workspace admin) can hand it back")
        await self.control.set(
            live,
            by_user=principal.user_id,
            by_label=principal.label,
            user_id=None,
            verb="releaseControl",
            details={"forced": force},
        )
        return live

    # -- sharing ports ------------------------------------------------------------------------------------

    async def share_port(self, ws: str, rig_id: str, guest_port: int, share: bool, principal: Principal) -> LiveRig:
        live = await self.get_live(ws, rig_id)
        if live.surface is not Surface.terminal:
            # A browser's only listening ports are its automation endpoint, which is the server's alone.
            raise Refused(f"rig {rig_id} is a {live.surface.value} rig; only terminal rigs share ports")
        async with self.acting(ws, rig_id, principal, mutating=True, what="rig.sharePort") as (live, handle):
            await self.upkeep.sync_ports(live)
            if share:
                await live.ports.share_lan(handle, guest_port)
            else:
                await live.ports.unshare_lan(handle, guest_port)
        await self.log_action(ws, rig_id, principal, "sharePort", {"guestPort": guest_port, "shared": share})
        return live
