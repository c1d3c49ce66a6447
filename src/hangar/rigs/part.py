"""The rigs part: ops, routes, migrations, events, and the manager's start and stop.

The manager is given its backend here (the enclosure backend by default; ``make_rigs_part`` takes another
factory) and never asks which one it runs on. Stopping the part closes every rig with ``serverShutdown``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Callable

from hangar.core.confine import Confinement
from hangar.core.context import AppContext
from hangar.core.disks import ScopeDisks
from hangar.core.part import Part
from hangar.errors import HangarError
from hangar.identity import IdentityService
from hangar.rigs import hooks
from hangar.rigs.backends.base import RigBackend
from hangar.rigs.backends.mobile.host import AVD_SPEC, DEVICE_SPEC
from hangar.rigs.confinement.scopes import RigConfinement
from hangar.rigs.events import RIG_EVENTS
from hangar.rigs.hosts.registry import RigHosts
from hangar.rigs.images.settings import IMAGE_SETTINGS
from hangar.rigs.lanes.consent import SERVER_MIGRATIONS
from hangar.rigs.lifecycle.budget import HOSTS_FIRST_SPEC, MEMORY_BUDGET_SPEC
from hangar.rigs.lifecycle.manager import RigManager
from hangar.rigs.lifecycle.packrefresh import REFRESH_SPEC, TICK_S, PackRefresh
from hangar.rigs.model import Surface
from hangar.rigs.ops import RIG_OPS
from hangar.rigs.routes import RIG_ROUTES
from hangar.rigs.store import MIGRATIONS

log = logging.getLogger(__name__)

BackendFactory = Callable[[AppContext], RigBackend]


def enclosure_backend(app: AppContext) -> RigBackend:
    from hangar.rigs.backends.enclosure import EnclosureBackend

    return EnclosureBackend(
        app.datadir.sub("rigs"),
        packs_root=app.settings.packs_root,
        metrics=app.metrics,
        apt_root=app.settings.rig_apt_root,
    )


def mobile_backend(app: AppContext) -> RigBackend:
    """Phones over adb (``mobile-emulator``): which device or emulator is read from the server settings at each
    open."""
    from hangar.rigs.backends.mobile import MobileBackend

    return MobileBackend(app.datadir.sub("rigs"), app.service(IdentityService).get_setting)


async def _start_disks(disks: ScopeDisks, backend: RigBackend) -> None:
    """Disks unmounted by a reboot are mounted again; a host that cannot make them is said at every start."""
    if backend.unavailable_reason() is not None:
        return  # no enclosure runs here, so nothing confined writes
    reason = disks.unavailable_reason()
    if reason is not None:
        log.warning("the working directories of confined code have no disk quota on this host: %s", reason)
        return
    try:
        await disks.remount()
    except HangarError as exc:
        log.warning("could not mount the disks of confined code again: %s", exc.message)


def make_rigs_part(
    backend_factory: BackendFactory = enclosure_backend, refresh_tick: float = TICK_S, *, confinement_only: bool = False
) -> Part:
    """The part on ``backend_factory``'s backend; its packs are checked against their archives every
    ``refresh_tick`` seconds when due (tests pass a short one). ``confinement_only`` (a ``hangar worker``): only
    the confinement user code runs in; the rig manager is not started, so this process never closes, sweeps or
    serves the rigs other processes of the database run."""
    tasks: list[asyncio.Task[None]] = []

    async def start(app: AppContext) -> None:
        backend = backend_factory(app)
        hosts = app.provide(RigHosts(app))
        surfaces = {Surface.mobile: mobile_backend(app)}
        manager = app.provide(RigManager(app, backend, hosts=hosts, surface_backends=surfaces))
        refresh = app.provide(PackRefresh(app, backend, refresh_tick))
        if app.bus.following:  # a server, not a command run on the data directory
            tasks.append(asyncio.create_task(refresh.run_forever(), name="rigs-pack-refresh"))
        disks = app.provide(ScopeDisks(app.datadir.root / "disks", app.service(IdentityService).get_setting))
        # User code (shell steps, command agents) runs in rigs of the same backend, its directories on disks.
        allowlist_of = functools.partial(hooks.confinement_allowlist, app)
        confinement = RigConfinement(backend, allowlist_of=allowlist_of, budget=manager.budget, disks=disks)
        app.provide(confinement, as_type=Confinement)
        if not confinement_only:
            await manager.start()
        await _start_disks(disks, backend)

    async def stop(app: AppContext) -> None:
        while tasks:
            task = tasks.pop()
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        confinement = app.maybe_service(Confinement)
        if confinement is not None:
            await confinement.aclose()
        manager = app.maybe_service(RigManager)
        if manager is not None and not confinement_only:
            await manager.stop()
        hosts = app.maybe_service(RigHosts)
        if hosts is not None:
            await hosts.aclose()

    return Part(
        name="rigs",
        ops=RIG_OPS,
        routes=RIG_ROUTES,
        migrations=[MIGRATIONS, SERVER_MIGRATIONS],
        events=RIG_EVENTS,
        settings=IMAGE_SETTINGS,
        server_settings=[MEMORY_BUDGET_SPEC, HOSTS_FIRST_SPEC, REFRESH_SPEC, DEVICE_SPEC, AVD_SPEC],
        start=start,
        stop=stop,
    )


RIGS_PART = make_rigs_part()
RIGS_CONFINEMENT_PART = make_rigs_part(confinement_only=True)
