"""The life of rigs: records, phases, reuse, parking and waking, reaping, the TTL, the memory budget, port
polling, and the events of the spec. It codes against ``RigBackend`` only (whichever backend the part start
hands it) and keeps the lifecycle rules in ``policy`` (pure), the rows in ``store``. ``manager.RigManager``
adds what callers do with a rig (exec, lanes, take-over, sharing ports).

Phases move like this (``closing`` then ``closed`` for every close reason):

    provisioning ──boot ok──▶ ready ◀──next action── parked
         │                      └──idle one window──▶ ┘
         └──boot failed──▶ failed          (process died underneath any live phase ──▶ failed)

Live state (handles, lanes, in-flight actions, forwards) is in memory; every phase change is written to
``rig_sessions`` so ``rig_list`` and the audit trail survive the process. Rows a previous process left live
are closed with ``serverShutdown`` at start.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from hangar.core.context import AppContext
from hangar.core.events import StoredEvent, Subscription
from hangar.core.ids import new_id
from hangar.core.principal import Principal
from hangar.core.settings import SettingSpec, WorkspaceSettings, strict_int
from hangar.errors import HangarError, NotFound, Refused, Unavailable
from hangar.identity import IdentityService, usable_workspace_ids
from hangar.rigs import hooks
from hangar.rigs.actions import TABLES
from hangar.rigs.backends.base import RigBackend, RigHandle, RigSpec
from hangar.rigs.errors import BackendFailure
from hangar.rigs.events import RigClosedEvent, RigReaped
from hangar.rigs.image import recipes
from hangar.rigs.images import BROWSER_IMAGE_KEY, EXEC_IMAGE_KEY, boot_image
from hangar.rigs.live import LiveRig
from hangar.rigs.model import (
    DEFAULT_MEMORY_BUDGET_MB,
    LIVE_PHASES,
    PORT_POLL_INTERVAL_S,
    REAP_REASONS,
    CloseReason,
    Phase,
    RigRecord,
    Surface,
    SurfaceLimits,
    limits_for,
    parse_surface,
    resolve_engine,
)
from hangar.rigs.policy import Park, evict, lifecycle
from hangar.rigs.store import RigStore

log = logging.getLogger(__name__)

SWEEP_INTERVAL_S = 30.0
BOOT_POLL_S = 0.5  # how often a waiting rig.open looks at the boot's status detail
OPEN_WAIT_S = 20.0  # rig.open answers `provisioning` when the boot (a first pack build) takes longer
MEMORY_BUDGET_SETTING = "rigs.memoryBudgetMb"
MEMORY_BUDGET_SPEC = SettingSpec(
    MEMORY_BUDGET_SETTING,
    "The resident-memory budget of all rigs on this host, in MB.",
    strict_int(MEMORY_BUDGET_SETTING, 512, 1024 * 1024),
)

# Surfaces this server runs; each other one needs what its verb table says.
RUNNABLE: frozenset[Surface] = frozenset({Surface.terminal, Surface.browser})
PLANNED: dict[Surface, str] = {t.surface: t.needs for t in TABLES.values() if t.surface not in RUNNABLE}
# Which workspace setting names a custom image per surface.
IMAGE_KEYS: dict[Surface, str] = {Surface.terminal: EXEC_IMAGE_KEY, Surface.browser: BROWSER_IMAGE_KEY}
CUSTOM_IMAGE_ENGINES = frozenset({"engine-a"})  # the browser override applies to engine A only


def _user_of(label: str) -> str | None:
    return label.removeprefix("user:") if label.startswith("user:") else None


class RigLifecycle:
    def __init__(self, app: AppContext, backend: RigBackend, *, budget_mb: int = DEFAULT_MEMORY_BUDGET_MB) -> None:
        self.app = app
        self.backend = backend
        self.budget_mb = budget_mb
        self.store = RigStore(app.dbs, app.clock)
        self._rigs: dict[str, LiveRig] = {}
        # (workspace, space, surface, engine) -> rig id: one terminal per space, one browser per engine per space
        self._reuse: dict[tuple[str, str, Surface, str | None], str] = {}
        self._open_lock = asyncio.Lock()
        self._tasks: list[asyncio.Task[None]] = []
        self._subs: list[Subscription] = []
        self._stopping = False
        # The background sweep and an explicit one (an op, a test) must not interleave: a caller whose sweep
        # returns has seen every decision of the rules carried out, including closes another sweep began.
        self._sweep_lock = asyncio.Lock()

    # -- start and stop -----------------------------------------------------------------------------------

    async def start(self) -> None:
        setting = await self.app.service(IdentityService).get_setting(MEMORY_BUDGET_SETTING)
        if isinstance(setting, int) and setting > 0:
            self.budget_mb = setting
        await self._close_leftovers()
        # Drops spooled by a process that died mid-upload never landed; nothing else reads them.
        await asyncio.to_thread(shutil.rmtree, self.app.datadir.root / "rigs" / "spool", True)
        self._subs.append(
            self.app.bus.subscribe(self._on_ending_event, name="rigs:endings", types=hooks.ENDING_EVENT_TYPES)
        )
        self._tasks.append(asyncio.create_task(self._loop(SWEEP_INTERVAL_S, self.sweep), name="rigs:sweep"))
        self._tasks.append(asyncio.create_task(self._loop(PORT_POLL_INTERVAL_S, self.poll_ports), name="rigs:ports"))

    async def stop(self) -> None:
        self._stopping = True
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()
        for sub in self._subs:
            await self.app.bus.unsubscribe(sub)
        self._subs.clear()
        await asyncio.gather(
            *(self._close(r, CloseReason.server_shutdown) for r in list(self._rigs.values())),
            return_exceptions=True,
        )
        await self.backend.aclose()

    async def _close_leftovers(self) -> None:
        """Rows a previous process left live describe rigs that died with it."""
        for ws in await usable_workspace_ids(self.app):
            for rec in await self.store.rigs(ws):
                await self.store.update(
                    ws,
                    rec.id,
                    phase=Phase.closed,
                    close_reason=CloseReason.server_shutdown,
                    status_detail="the server stopped before closing it",
                    closed_at=self.app.clock.now(),
                )
                await asyncio.to_thread(shutil.rmtree, self._home_of(rec.id), True)

    async def _loop(self, interval: float, step: Any) -> None:
        while True:
            await self.app.clock.sleep(interval)
            try:
                await step()
            except Exception:
                log.exception("rigs: periodic %s failed", getattr(step, "__name__", step))

    def _home_of(self, rig_id: str) -> Path:
        return self.app.datadir.root / "rigs" / "homes" / rig_id

    # -- opening ------------------------------------------------------------------------------------------

    async def open(
        self,
        ws: str,
        space_id: str,
        surface_name: str,
        engine_name: str | None,
        principal: Principal,
        on_status: Callable[[str], Awaitable[None]] | None = None,
    ) -> LiveRig:
        """The space's rig, opened or reused, once booted or after ``OPEN_WAIT_S`` still booting; ``on_status``
        hears each change of the boot's status detail meanwhile (a first pack build's steps)."""
        surface = parse_surface(surface_name)
        engine = resolve_engine(surface, engine_name)
        if surface not in RUNNABLE:
            raise Unavailable(
                f"{surface.value} rigs are planned but need {PLANNED[surface]}, which this server does not have yet"
            )
        reason = self.backend.unavailable_reason()
        if reason is not None:
            raise Unavailable(f"{surface.value} rigs cannot run on this host: {reason}")
        await hooks.check_space(self.app, ws, space_id)
        async with self._open_lock:
            existing = self._rigs.get(self._reuse.get((ws, space_id, surface, engine), ""))
            if existing is not None and existing.phase in LIVE_PHASES:
                self._touch(existing, principal)
                live = existing
            else:
                limits = limits_for(surface, engine)
                await self._admit(limits.memory_mb)
                live = await self._provision(ws, space_id, surface, engine, limits, principal)
        if live.phase is Phase.provisioning and live.boot is not None:
            await self._await_boot(live, live.boot, on_status)
        return live

    async def _await_boot(
        self, live: LiveRig, boot: asyncio.Future[Any], on_status: Callable[[str], Awaitable[None]] | None
    ) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + OPEN_WAIT_S
        said: str | None = None
        while (left := deadline - loop.time()) > 0:
            if on_status is not None and live.status_detail != said:
                said = live.status_detail
                await on_status(said or "provisioning")
            try:
                # A boot that fails raises here, as it did when waited on whole.
                await asyncio.wait_for(asyncio.shield(boot), min(left, BOOT_POLL_S))
                return
            except TimeoutError:
                continue

    async def _admit(self, need_mb: int) -> None:
        """Make room for a new rig's memory ceiling under the budget, evicting idle rigs LRU first."""
        await self.measure()
        plan = evict([r.state() for r in self._rigs.values()], self.budget_mb, need_mb)
        if not plan.fits:
            raise Refused(
                f"the rigs' memory budget ({self.budget_mb} MB) cannot hold another {need_mb} MB rig: "
                f"{plan.used_mb} MB are resident in rigs that are in use; close one first"
            )
        for rig_id in plan.victims:
            victim = self._rigs.get(rig_id)
            if victim is not None:
                await self._close(victim, CloseReason.idle_timeout, cause="memory")

    async def _provision(
        self,
        ws: str,
        space_id: str,
        surface: Surface,
        engine: str | None,
        limits: SurfaceLimits,
        principal: Principal,
    ) -> LiveRig:
        rig_id = new_id()
        home = self._home_of(rig_id)
        home.mkdir(parents=True, exist_ok=True)
        browser = surface is Surface.browser
        display = limits.boot_display
        spec = RigSpec(
            rig_id=rig_id,
            workspace_id=ws,
            surface=surface.value,
            memory_mb=limits.memory_mb,
            vcpus=limits.vcpus,
            allow_hosts=(
                hooks.browser_allowlist(self.app, first_boot=self._first_boot(engine))
                if browser
                else await hooks.allowlist(self.app, ws, space_id)
            ),
            # A browser rig sees no worktree: it is driven through its page, not its files.
            home_dir=home,
            worktree=None if browser else await hooks.worktree_of(self.app, ws, space_id),
            engine=engine,
            display=(display.width, display.height) if display is not None else None,
            trust_pem=await hooks.dev_ca_pem(self.app) if browser else None,
        )
        await self.store.insert(
            ws,
            rig_id=rig_id,
            space_id=space_id,
            surface=surface,
            engine=engine,
            backend=self.backend.name,
            opened_by=principal.label,
            memory_mb=limits.memory_mb,
            vcpus=limits.vcpus,
            display=str(limits.boot_display) if limits.boot_display else None,
        )
        now = self.app.clock.monotonic()
        live = LiveRig(ws, rig_id, space_id, surface, engine, limits, principal.label, home, now, now)
        live.last_actor = principal.label
        self._rigs[rig_id] = live
        self._reuse[(ws, space_id, surface, engine)] = rig_id
        live.boot = asyncio.create_task(self._boot(live, spec), name=f"rigs:boot:{rig_id}")
        # A boot that fails after rig.open answered is recorded on the row; nobody awaits the task then.
        live.boot.add_done_callback(lambda t: None if t.cancelled() else t.exception())
        await self.store.append_action(ws, rig_id, principal=principal.label, verb="open")
        await self._custom_image_notice(live)
        return live

    def _first_boot(self, engine: str | None) -> bool:
        """Whether this boot is the engine's first here: its pack is not built yet, so the boot builds it (and
        reaches the distribution's package archives doing so)."""
        if engine is None or engine not in recipes.BROWSERS:
            return False
        name = recipes.BROWSERS[engine].name
        return not any(p.name == name and p.state == "ready" for p in self.backend.packs())

    async def _custom_image_notice(self, live: LiveRig) -> None:
        """The stored custom image is checked again at boot: an invalid value is ignored loudly (``boot_image``
        logs it) and the default boots. A valid one cannot be pulled by a backend that boots only its own pack,
        which is said just as loudly rather than pretended. The browser image is engine A's only: rigs of the
        other engines ignore it, loudly too."""
        key = IMAGE_KEYS.get(live.surface)
        if key is None:
            return
        stored = await self.app.service(WorkspaceSettings).get(live.ws, key)
        if stored is None:
            return
        what = f"{live.engine} image" if live.engine else f"{live.surface.value} image"
        if live.engine is not None and live.engine not in CUSTOM_IMAGE_ENGINES:
            note = f"ignored {key} (it applies to engine-a rigs only); {live.engine} boots its pinned image"
        elif (image := boot_image(stored, key)) is None:
            note = f"ignored the invalid {key} setting; booting the default {what}"
        elif not self.backend.boots_registry_images:
            note = (
                f"the {self.backend.name} backend boots its own {what} pack; the custom image {image} "
                "needs the microvm backend, which is planned"
            )
        else:
            return
        log.warning("rigs: rig %s: %s", live.id, note)
        live.notice = note
        live.status_detail = note
        await self.store.append_action(live.ws, live.id, principal="server", verb="imageNotice", details={"note": note})

    async def _boot(self, live: LiveRig, spec: RigSpec) -> RigHandle:
        def progress(step: str) -> None:
            live.status_detail = step[:500]
            self._touch(live)  # a long first pack build is not idleness

        try:
            handle = await self.backend.start(spec, progress)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            message = exc.message if isinstance(exc, HangarError) else "the backend failed to start the rig"
            if not isinstance(exc, HangarError):
                log.exception("rigs: boot of %s failed", live.id)
            await self._fail(live, f"boot failed: {message}")
            raise BackendFailure(f"rig {live.id} failed to start: {message}") from exc
        if live.phase is not Phase.provisioning:  # closed while booting
            await handle.aclose()
            raise NotFound(f"rig {live.id} was closed while it started")
        live.handle = handle
        note = await self._prepare_ready(live, handle)
        if live.surface is Surface.browser:
            await self._open_site_lane(live, handle)
        live.phase = Phase.ready
        live.status_detail = "; ".join(n for n in (live.notice, note) if n)
        live.last_active_at = self.app.clock.monotonic()
        live.watcher = asyncio.create_task(self._watch(live, handle), name=f"rigs:watch:{live.id}")
        await self.store.update(live.ws, live.id, phase=Phase.ready, status_detail=live.status_detail)
        live.notify_phase()
        return handle

    async def _prepare_ready(self, live: LiveRig, handle: RigHandle) -> str | None:
        """What a booted rig needs before it is ``ready`` (the manager adds a browser's dev-domain lanes); returns
        a note for its status detail, or None."""
        return None

    async def _open_site_lane(self, live: LiveRig, handle: RigHandle) -> None:
        """The product site is on every browser rig's default allowlist wherever it listens: when it listens on
        this host, the rig reaches it at the same origin (``http://127.0.0.1:<site port>``) through a lane on
        the rig's own loopback. A backend without loopback lanes says so in the action log."""
        lane = hooks.site_lane(self.app)
        if lane is None:
            return
        port, handler = lane
        try:
            await handle.serve_loopback(port, handler)
        except HangarError as exc:
            log.warning("rigs: rig %s cannot reach the product site: %s", live.id, exc.message)
            await self.log_action(live.ws, live.id, "server", "siteUnreachable", {"port": port, "why": exc.message})

    async def _watch(self, live: LiveRig, handle: RigHandle) -> None:
        await handle.wait_dead()
        if live.phase in LIVE_PHASES:
            log.warning("rigs: rig %s died underneath (backend failure)", live.id)
            await self._fail(live, "the rig's processes died underneath it")

    # -- finding and waking rigs --------------------------------------------------------------------------

    def live(self, ws: str, rig_id: str) -> LiveRig:
        live = self._rigs.get(rig_id)
        if live is None or live.ws != ws:
            raise NotFound(f"no live rig {rig_id} in this workspace")
        return live

    async def get_live(self, ws: str, rig_id: str) -> LiveRig:
        """The live rig, or a clear error saying why there is none (unknown, closed, failed)."""
        live = self._rigs.get(rig_id)
        if live is not None and live.ws == ws:
            return live
        rec = await self.store.get(ws, rig_id)
        if rec is None:
            raise NotFound(f"no rig {rig_id} in this workspace")
        reason = f" ({rec.close_reason.value})" if rec.close_reason else ""
        raise NotFound(f"rig {rig_id} is {rec.phase.value}{reason}; open a new one")

    def _touch(self, live: LiveRig, principal: Principal | None = None) -> None:
        live.last_active_at = self.app.clock.monotonic()
        if principal is not None:
            live.last_actor = principal.label

    async def _awake(self, live: LiveRig) -> RigHandle:
        if live.phase is Phase.provisioning and live.boot is not None:
            await asyncio.shield(live.boot)
        async with live.lock:
            if live.phase is Phase.parked and live.handle is not None:
                await live.handle.wake()
                live.phase = Phase.ready
                await self.store.update(live.ws, live.id, phase=Phase.ready)
                live.notify_phase()
        if live.phase is not Phase.ready or live.handle is None:
            raise NotFound(f"rig {live.id} is {live.phase.value}; open a new one")
        return live.handle

    async def log_action(
        self, ws: str, rig_id: str, principal: Principal | str, verb: str, details: dict[str, Any], outcome: str = "ok"
    ) -> int:
        label = principal if isinstance(principal, str) else principal.label
        return await self.store.append_action(ws, rig_id, principal=label, verb=verb, outcome=outcome, details=details)

    # -- ports --------------------------------------------------------------------------------------------

    async def poll_ports(self) -> None:
        """Mirror every awake rig's listening ports (called about every four seconds)."""
        for live in list(self._rigs.values()):
            # Browser rigs are not polled: they listen on their automation ports, forwarded once at boot.
            if live.surface is not Surface.terminal:
                continue
            if live.phase is Phase.ready and live.handle is not None and live.handle.alive():
                await self.sync_ports(live)

    async def sync_ports(self, live: LiveRig) -> None:
        handle = live.handle
        if handle is None or live.surface is not Surface.terminal:
            return
        try:
            async with live.lock:
                if live.phase is not Phase.ready:
                    return
                listening = await handle.listening_ports()
                before = live.ports.rows()
                fresh = await live.ports.sync(handle, listening)
                after = live.ports.rows()
                if after != before:
                    live.notify({"type": "ports", "ports": after})
        except HangarError as exc:
            log.warning("rigs: port poll of %s failed: %s", live.id, exc.message)
            return
        if fresh:
            await self.log_action(live.ws, live.id, "server", "portsNotForwarded", {"guestPorts": fresh})

    # -- the periodic sweep -------------------------------------------------------------------------------

    async def sweep(self) -> None:
        """Measure, then park, reap, evict and close rigs whose owners are gone, as the rules say now."""
        async with self._sweep_lock:
            await self._sweep()

    async def _sweep(self) -> None:
        await self.measure()
        now = self.app.clock.monotonic()
        for decision in lifecycle([r.state() for r in self._rigs.values()], now):
            target = self._rigs.get(decision.rig_id)
            if target is None:
                continue
            if isinstance(decision, Park):
                await self._park(target)
            else:
                await self._close(target, decision.reason, cause=decision.cause)
        plan = evict([r.state() for r in self._rigs.values()], self.budget_mb)
        for rig_id in plan.victims:
            victim = self._rigs.get(rig_id)
            if victim is not None:
                await self._close(victim, CloseReason.idle_timeout, cause="memory")
        for live in list(self._rigs.values()):
            if not await hooks.still_member(self.app, live.ws, _user_of(live.opened_by)):
                await self._close(live, CloseReason.workspace_gone)

    async def measure(self) -> None:
        """Refresh every running rig's resident memory (parked rigs still hold theirs)."""
        for live in list(self._rigs.values()):
            if live.handle is not None and live.phase in (Phase.ready, Phase.parked):
                try:
                    mb = await live.handle.resident_mb()
                except HangarError:
                    continue
                if mb != live.resident_mb:
                    live.resident_mb = mb
                    await self.store.update(live.ws, live.id, resident_mb=mb)

    async def _park(self, live: LiveRig) -> None:
        async with live.lock:
            if live.phase is not Phase.ready or live.handle is None or live.lanes or live.busy:
                return
            try:
                await live.handle.park()
            except HangarError as exc:
                log.warning("rigs: parking %s failed: %s", live.id, exc.message)
                return
            live.phase = Phase.parked
            await self.store.update(live.ws, live.id, phase=Phase.parked)
            live.notify_phase()
        await self.log_action(live.ws, live.id, "server", "park", {})

    async def _on_ending_event(self, ev: StoredEvent) -> None:
        """An archived space ends its rigs; a member who left takes the rigs they opened with them (the sweep
        also notices lost membership, for changes made without an event)."""
        in_ws = [r for r in self._rigs.values() if r.ws == ev.workspace_id]
        space_id = hooks.ended_space(ev)
        for live in [r for r in in_ws if r.space_id == space_id]:
            await self._close(live, CloseReason.conversation_ended)
        user_id = hooks.removed_member(ev)
        for live in [r for r in in_ws if user_id is not None and _user_of(r.opened_by) == user_id]:
            await self._close(live, CloseReason.workspace_gone)

    # -- closing ------------------------------------------------------------------------------------------

    async def close(self, ws: str, rig_id: str, reason: CloseReason, principal: Principal) -> RigRecord:
        live = self._rigs.get(rig_id)
        if live is not None and live.ws == ws:
            self._touch(live, principal)
            await self._close(live, reason)
        rec = await self.store.get(ws, rig_id)
        if rec is None:
            raise NotFound(f"no rig {rig_id} in this workspace")
        if rec.phase in LIVE_PHASES:  # a row without a live rig behind it (should not happen): settle it
            await self.store.update(ws, rig_id, phase=Phase.closed, close_reason=reason, closed_at=self.app.clock.now())
            rec = await self.store.get(ws, rig_id)
            assert rec is not None
        return rec

    async def _teardown(self, live: LiveRig) -> None:
        current = asyncio.current_task()
        if live.boot is not None and not live.boot.done() and live.boot is not current:
            live.boot.cancel()
            await asyncio.gather(live.boot, return_exceptions=True)
        if live.watcher is not None and live.watcher is not current:
            live.watcher.cancel()
            await asyncio.gather(live.watcher, return_exceptions=True)
        handle = live.handle
        if handle is not None:
            with contextlib.suppress(HangarError):
                await live.ports.aclose(handle)
            try:
                await handle.aclose()
            except Exception:
                log.exception("rigs: destroying %s failed", live.id)
        await asyncio.to_thread(shutil.rmtree, live.home, True)
        self._rigs.pop(live.id, None)
        key = (live.ws, live.space_id, live.surface, live.engine)
        if self._reuse.get(key) == live.id:
            del self._reuse[key]

    async def _close(self, live: LiveRig, reason: CloseReason, *, cause: str | None = None) -> None:
        if live.phase not in LIVE_PHASES:
            # Closing already (another reason got there first): wait for it to finish.
            await live.ended.wait()
            return
        live.phase = Phase.closing
        try:
            await self.store.update(live.ws, live.id, phase=Phase.closing)
            await self._teardown(live)
            live.phase = Phase.closed
            await self.log_action(live.ws, live.id, "server", "close", {"reason": reason.value, "cause": cause})
            fields = {"phase": Phase.closed, "close_reason": reason, "closed_at": self.app.clock.now()}
            await self._record_end(live, reason, cause, controller=None, **fields)
        finally:
            live.phase = Phase.closed
            live.notify_phase(reason.value)
            live.ended.set()

    async def _fail(self, live: LiveRig, detail: str) -> None:
        if live.phase not in LIVE_PHASES:
            await live.ended.wait()
            return
        live.phase = Phase.failed
        live.status_detail = detail
        try:
            await self._teardown(live)
            await self.log_action(live.ws, live.id, "server", "failed", {"reason": CloseReason.backend_failure.value})
            await self._record_end(
                live,
                CloseReason.backend_failure,
                None,
                phase=Phase.failed,
                close_reason=CloseReason.backend_failure,
                status_detail=detail[:500],
                closed_at=self.app.clock.now(),
                controller=None,
            )
        finally:
            live.notify_phase(CloseReason.backend_failure.value)
            live.ended.set()

    async def _record_end(self, live: LiveRig, reason: CloseReason, cause: str | None, **fields: Any) -> None:
        """Store how the rig ended and publish ``rigs.closed`` (and ``rigs.reaped`` for a reaping) in one
        transaction."""
        closed = RigClosedEvent(
            workspace_id=live.ws,
            rig_id=live.id,
            space_id=live.space_id,
            surface=live.surface.value,
            reason=reason.value,
            phase="failed" if fields.get("phase") is Phase.failed else "closed",
        )
        try:
            async with self.app.bus.transaction(live.ws) as tx:
                await self.store.update(live.ws, live.id, conn=tx.conn, **fields)
                await tx.publish(closed)
                if reason in REAP_REASONS and cause in ("idle", "ttl", "memory"):
                    await tx.publish(
                        RigReaped(
                            workspace_id=live.ws,
                            rig_id=live.id,
                            space_id=live.space_id,
                            reason=reason.value,
                            cause=cause,
                            agent=live.last_actor,
                        )
                    )
        except Exception:
            if not self._stopping:
                raise
            log.warning("rigs: the closing of %s was not recorded (the server is stopping)", live.id)

    # -- listing ------------------------------------------------------------------------------------------

    async def records(self, ws: str, *, include_closed: bool) -> list[tuple[RigRecord, LiveRig | None]]:
        return [(rec, self._rigs.get(rec.id)) for rec in await self.store.rigs(ws, include_closed=include_closed)]

    async def record(self, ws: str, rig_id: str) -> tuple[RigRecord, LiveRig | None]:
        """One rig's record and, while it lives, its live state; looking does not touch it."""
        rec = await self.store.get(ws, rig_id)
        if rec is None:
            raise NotFound(f"no rig {rig_id} in this workspace")
        live = self._rigs.get(rig_id)
        return rec, live if live is not None and live.ws == ws else None

    def live_rigs(self) -> list[LiveRig]:
        return list(self._rigs.values())
