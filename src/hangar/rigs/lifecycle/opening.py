"""Opening rigs: reusing the space's live rig or provisioning a new one, booting it on the backend, and
watching it for a death underneath.

An open answers once the boot is done or after ``OPEN_WAIT_S`` still booting (a first pack build takes
minutes): the boot runs as its own task, records its own failure, and whoever acts on the rig later waits for
it (``RigUpkeep.awake``). Room under the memory budget is made before provisioning (``RigUpkeep.make_room``,
under the budget's lock); a failed boot or a dead rig ends through ``RigCloser.fail``.

Each step of a boot (a first pack build's steps, then the boot's own) becomes the rig's status detail, a
``progress`` event on its watch lanes (``rig.watch``: ``ProgressNotice``, what
the space's rig panel shows) and one line in the server log.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from hangar.core.context import AppContext
from hangar.core.disks import DEFAULT_RIG_DISK_MB, ScopeDisks
from hangar.core.ids import new_id
from hangar.core.metrics import Stopwatch
from hangar.core.principal import Principal
from hangar.core.settings import WorkspaceSettings
from hangar.errors import HangarError, NotFound, Refused, Unavailable
from hangar.identity import IdentityService
from hangar.rigs import hooks
from hangar.rigs.actions import TABLES
from hangar.rigs.backends.base import GuestTree, RigBackend, RigHandle, RigSpec
from hangar.rigs.backends.fullvm.backend import VM_MEMORY_MB, VM_VCPUS, FullVmBackend
from hangar.rigs.backends.fullvm.imports import list_images
from hangar.rigs.backends.kvmprobe import KvmProbe
from hangar.rigs.backends.simulator import simulator_refusal
from hangar.rigs.errors import BackendFailure
from hangar.rigs.hosts.registry import RemoteBackend, RigHosts
from hangar.rigs.images import recipes
from hangar.rigs.images.packs import step_numbers
from hangar.rigs.images.settings import BROWSER_IMAGE_KEY, EXEC_IMAGE_KEY, boot_image
from hangar.rigs.lifecycle.backendchoice import BackendChoice, asks_vm, check_reuse, choose_backend
from hangar.rigs.lifecycle.budget import HOSTS_FIRST_SETTING
from hangar.rigs.lifecycle.closing import RigCloser
from hangar.rigs.lifecycle.ownership import RigOwnership
from hangar.rigs.lifecycle.upkeep import RigUpkeep
from hangar.rigs.live.notices import ProgressNotice
from hangar.rigs.live.rigs import LiveRig, LiveRigs
from hangar.rigs.model import (
    LIVE_PHASES,
    Phase,
    Surface,
    SurfaceLimits,
    limits_for,
    parse_surface,
    resolve_engine,
)
from hangar.rigs.store import RigStore

log = logging.getLogger(__name__)

BOOT_POLL_S = 0.5  # how often a waiting rig.open looks at the boot's status detail
OPEN_WAIT_S = 20.0  # rig.open answers `provisioning` when the boot (a first pack build) takes longer

# Surfaces this server runs; each other one needs what its verb table says.
RUNNABLE: frozenset[Surface] = frozenset({Surface.terminal, Surface.browser, Surface.computer, Surface.mobile})
PLANNED: dict[Surface, str] = {t.surface: t.needs for t in TABLES.values() if t.surface not in RUNNABLE}
# Which workspace setting names a custom image per surface.
IMAGE_KEYS: dict[Surface, str] = {Surface.terminal: EXEC_IMAGE_KEY, Surface.browser: BROWSER_IMAGE_KEY}
CUSTOM_IMAGE_ENGINES = frozenset({"engine-a"})  # the browser override applies to engine A only

StatusListener = Callable[[str], Awaitable[None]]
# What a booted rig needs before it is `ready`; returns a note for its status detail, or None.
PrepareReady = Callable[[LiveRig, RigHandle], Awaitable[str | None]]


def rig_home(app: AppContext, rig_id: str) -> Path:
    """A rig's home directory on this host; it goes with the rig (and with rigs a previous process left)."""
    return app.datadir.root / "rigs" / "homes" / rig_id


class RigOpener:
    def __init__(
        self,
        app: AppContext,
        backend: RigBackend,
        store: RigStore,
        rigs: LiveRigs,
        upkeep: RigUpkeep,
        closer: RigCloser,
        ownership: RigOwnership,
        *,
        prepare_ready: PrepareReady,
        hosts: RigHosts | None = None,
        surface_backends: Mapping[Surface, RigBackend] | None = None,
        vm_backends: Mapping[str, FullVmBackend] | None = None,
        kvm: KvmProbe | None = None,
    ) -> None:
        self.app = app
        self.backend = backend
        # Surfaces another backend runs (phones: mobile-emulator); every other surface runs on ``backend``.
        self.surface_backends = dict(surface_backends or {})
        # Computer rigs asked for as full VMs (``backendchoice``), by backend name, and the KVM probe they consult.
        self.vm_backends = dict(vm_backends or {})
        self.kvm = kvm or KvmProbe()
        self.hosts = hosts
        self.store = store
        self.rigs = rigs
        self.upkeep = upkeep
        self.closer = closer
        self.ownership = ownership
        self.prepare_ready = prepare_ready
        # Two opens of one space must not both provision: the second reuses what the first registered.
        self._open_lock = asyncio.Lock()

    async def open(
        self,
        ws: str,
        space_id: str,
        surface_name: str,
        engine_name: str | None,
        principal: Principal,
        on_status: StatusListener | None = None,
        *,
        backend: str | None = None,
        image_id: str | None = None,
    ) -> LiveRig:
        """The space's rig, opened or reused, once booted or after ``OPEN_WAIT_S`` still booting; ``on_status``
        hears each change of the boot's status detail meanwhile (a first pack build's steps). ``backend`` and
        ``image_id`` ask for a full VM (``backendchoice``)."""
        surface = parse_surface(surface_name)
        engine = resolve_engine(surface, engine_name)
        choice = await self.choose(surface, backend, image_id)
        if surface is Surface.simulator:
            raise Unavailable(simulator_refusal("rig.open"))
        if surface not in RUNNABLE:
            raise Unavailable(
                f"{surface.value} rigs are planned but need {PLANNED[surface]}, which this server does not have yet"
            )
        own = self._backend_for(surface, choice)
        reason = await own.availability()
        if reason is not None:
            raise Unavailable(f"{surface.value} rigs cannot run on this host: {reason}")
        await hooks.check_space(self.app, ws, space_id)
        async with self._open_lock:
            existing = self.rigs.reusable((ws, space_id, surface, engine))
            if existing is not None and existing.phase in LIVE_PHASES:
                if surface is Surface.computer:  # one desktop per space, on whichever backend it runs
                    check_reuse(existing.backend, existing.image_id, backend, image_id)
                self.rigs.touch(existing, principal)
                live = existing
            else:
                limits = limits_for(surface, engine)
                if choice.vm:  # the VM's own RAM and QEMU, not the enclosure desktop's ceiling
                    limits = dataclasses.replace(limits, memory_mb=VM_MEMORY_MB, vcpus=VM_VCPUS)
                # A browser rig sees no worktree: it is driven through its page, not its files; nor does a VM (its
                # disk is its image's overlay, with nothing of this host's mounted in it).
                shared = surface is not Surface.browser and not choice.vm
                tree = await hooks.worktree_of(self.app, ws, space_id) if shared else None
                # Room is made and the rig registered (counted at its ceiling while it boots) in one step of the
                # budget, so an enclosure admitted meanwhile sees it.
                async with self.upkeep.budget.lock:
                    placed = await self._place(ws, surface, tree, limits.memory_mb, own)
                    live = await self._provision(
                        ws, space_id, surface, engine, limits, principal, placed, tree, choice.image_id
                    )
        if live.phase is Phase.provisioning and live.boot is not None:
            await self._await_boot(live, live.boot, on_status)
        return live

    async def choose(self, surface: Surface, backend: str | None, image_id: str | None) -> BackendChoice:
        """The backend asked for, checked (``backendchoice``): the KVM probe is asked only for ``fullvm-kvm``, the
        imported images read only for a full VM."""
        vm = asks_vm(backend)
        verdict = await self.kvm.verdict() if backend == "fullvm-kvm" else None
        images = await asyncio.to_thread(list_images, self.app.datadir.sub("rigs")) if vm else []
        return choose_backend(surface, backend, image_id, verdict=verdict, images=images)

    def _backend_for(self, surface: Surface, choice: BackendChoice) -> RigBackend:
        if choice.backend is None:
            return self.surface_backends.get(surface, self.backend)
        found = self.vm_backends.get(choice.backend)
        if found is None:
            raise Unavailable(f"this server runs no {choice.backend} backend")
        return found

    async def _place(
        self, ws: str, surface: Surface, tree: GuestTree | None, need_mb: int, own: RigBackend
    ) -> RigBackend:
        """Where a new rig runs: this server's own backend when it has room without evicting anything (or the
        server setting ``rigs.hostsFirst`` says hosts first), else the rig host serving workspace ``ws`` (its
        credential's workspaces) with the most room, else this
        server's backend after evicting idle rigs, else refused naming every budget. Only terminal rigs whose
        space has no worktree go to rig hosts: a space's files stay on this host (README, Rig hosts)."""
        remote_ok = self.hosts is not None and surface is Surface.terminal and tree is None
        if self.hosts is None or not remote_ok or not self.hosts.connected():
            await self.upkeep.make_room(need_mb)
            return own
        await self.upkeep.measure()
        first = await self.app.service(IdentityService).get_setting(HOSTS_FIRST_SETTING) is True
        if first or not await self.upkeep.budget.fits_now(need_mb):
            remote = await self.hosts.place(need_mb, ws)
            if remote is not None:
                return remote
        try:
            await self.upkeep.make_room(need_mb)
        except Refused as exc:
            rooms = (
                "; ".join(
                    f"rig host {r.name!r} has {max(r.free_mb, 0)} of its {r.budget_mb} MB free (its --memory-budget)"
                    for r in await self.hosts.rooms(ws)
                )
                or "no rig host connected runs rigs of this workspace (their credentials name others)"
            )
            raise Refused(f"no host has room for another {need_mb} MB rig: {rooms}; and {exc.message}") from exc
        return self.backend

    async def _await_boot(self, live: LiveRig, boot: asyncio.Future[Any], on_status: StatusListener | None) -> None:
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

    async def _provision(
        self,
        ws: str,
        space_id: str,
        surface: Surface,
        engine: str | None,
        limits: SurfaceLimits,
        principal: Principal,
        backend: RigBackend,
        tree: GuestTree | None,
        image_id: str | None = None,
    ) -> LiveRig:
        rig_id = new_id()
        home = rig_home(self.app, rig_id)
        home.mkdir(parents=True, exist_ok=True)
        disks, disk_mb = self.app.maybe_service(ScopeDisks), DEFAULT_RIG_DISK_MB
        # A phone keeps nothing in a home on this host, nor does a VM (its files are in its overlay, which its
        # disk_mb bounds).
        if disks is not None and surface is not Surface.mobile:
            if image_id is None:
                await disks.ensure(home)  # what the rig keeps in its home has a quota too
            disk_mb = await disks.rig_disk_mb()
        browser = surface is Surface.browser
        display = limits.boot_display
        spec = RigSpec(
            rig_id=rig_id,
            workspace_id=ws,
            surface=surface.value,
            memory_mb=limits.memory_mb,
            vcpus=limits.vcpus,
            allow_hosts=await self._allowlist(ws, space_id, surface, engine),
            home_dir=home,
            worktree=tree,
            engine=engine,
            display=(display.width, display.height) if display is not None else None,
            trust_pem=await hooks.dev_ca_pem(self.app) if browser else None,
            disk_mb=disk_mb,
            image_id=image_id,
        )
        await self.ownership.claim(ws, rig_id)
        try:
            await self.store.insert(
                ws,
                rig_id=rig_id,
                space_id=space_id,
                surface=surface,
                engine=engine,
                backend=backend.name,
                opened_by=principal.label,
                memory_mb=limits.memory_mb,
                vcpus=limits.vcpus,
                display=str(limits.boot_display) if limits.boot_display else None,
                server_url=self.app.settings.serving_origin,
            )
        except BaseException:
            self.ownership.release(rig_id)  # no row was written: nothing to keep a claim for
            raise
        now = self.app.clock.monotonic()
        live = LiveRig(ws, rig_id, space_id, surface, engine, limits, principal.label, home, now, now)
        live.last_actor = principal.label
        live.host_id = backend.room.host_id if isinstance(backend, RemoteBackend) else None
        live.backend, live.image_id = backend.name, image_id
        self.rigs.add(live)
        live.boot = asyncio.create_task(self._boot(live, spec, backend), name=f"rigs:boot:{rig_id}")
        # A boot that fails after rig.open answered is recorded on the row; nobody awaits the task then.
        live.boot.add_done_callback(lambda t: None if t.cancelled() else t.exception())
        opened = {"backend": backend.name, "imageId": image_id} if image_id is not None else None
        await self.store.append_action(ws, rig_id, principal=principal.label, verb="open", details=opened)
        await self._custom_image_notice(live)
        return live

    async def _allowlist(self, ws: str, space_id: str, surface: Surface, engine: str | None) -> frozenset[str]:
        """The spec's egress defaults: a browser's own, a desktop's empty (everything denied until a caller grants
        hosts with ``rig.grantHosts``), the developer baseline for a terminal."""
        if surface is Surface.browser:
            return hooks.browser_allowlist(self.app, first_boot=self._first_boot(engine))
        if surface is Surface.computer:
            return frozenset()
        return await hooks.allowlist(self.app, ws, space_id)

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

    async def _boot(self, live: LiveRig, spec: RigSpec, backend: RigBackend) -> RigHandle:
        def progress(step: str) -> None:
            self.rigs.touch(live)  # a long first pack build is not idleness
            text = step[:500]
            if text == live.status_detail:
                return
            live.status_detail = text
            log.info("rigs: rig %s (%s) starts: %s", live.id, live.surface.value, text)
            step_index, steps = step_numbers(text) or (0, 0)
            live.notify(ProgressNotice(detail=text, step=step_index, steps=steps))

        clock = Stopwatch()
        try:
            handle = await backend.start(spec, progress)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.app.metrics.rig_booted(live.surface.value, False, clock.seconds())
            message = exc.message if isinstance(exc, HangarError) else "the backend failed to start the rig"
            if not isinstance(exc, HangarError):
                log.exception("rigs: boot of %s failed", live.id)
            await self.closer.fail(live, f"boot failed: {message}")
            raise BackendFailure(f"rig {live.id} failed to start: {message}") from exc
        if live.phase is not Phase.provisioning:  # closed while booting
            await handle.aclose()
            raise NotFound(f"rig {live.id} was closed while it started")
        live.handle = handle
        handle.on_egress_refused(live.egress_refused)  # people watching the rig are told what it could not reach
        note = await self.prepare_ready(live, handle)
        if live.surface is Surface.browser:
            await self._open_site_lane(live, handle)
        live.phase = Phase.ready
        self.app.metrics.rig_booted(live.surface.value, True, clock.seconds())
        live.status_detail = "; ".join(n for n in (live.notice, note) if n)
        live.last_active_at = self.app.clock.monotonic()
        live.watcher = asyncio.create_task(self._watch(live, handle), name=f"rigs:watch:{live.id}")
        await self.store.update(live.ws, live.id, phase=Phase.ready, status_detail=live.status_detail)
        live.notify_phase()
        return handle

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
            await self.store.append_action(
                live.ws,
                live.id,
                principal="server",
                verb="siteUnreachable",
                details={"port": port, "why": exc.message},
            )

    async def _watch(self, live: LiveRig, handle: RigHandle) -> None:
        await handle.wait_dead()
        if live.phase in LIVE_PHASES:
            log.warning("rigs: rig %s died underneath (backend failure)", live.id)
            await self.closer.fail(live, handle.death_detail())
