"""The rigs part: ops, routes, migrations, events, and the manager's start and stop.

The manager is given its backend here (the enclosure backend by default; ``make_rigs_part`` takes another
factory) and never asks which one it runs on. Stopping the part closes every rig with ``serverShutdown``.
"""

from __future__ import annotations

from collections.abc import Callable

from hangar.core.confine import Confinement
from hangar.core.context import AppContext
from hangar.core.part import Part
from hangar.rigs.backends.base import RigBackend
from hangar.rigs.confinement import RigConfinement
from hangar.rigs.consent import SERVER_MIGRATIONS
from hangar.rigs.devdomain_ops import DEV_DOMAIN_OPS
from hangar.rigs.events import RIG_EVENTS
from hangar.rigs.images import IMAGE_SETTINGS
from hangar.rigs.lifecycle import MEMORY_BUDGET_SPEC
from hangar.rigs.manager import RigManager
from hangar.rigs.ops import RIG_OPS
from hangar.rigs.routes import RIG_ROUTES
from hangar.rigs.store import MIGRATIONS

BackendFactory = Callable[[AppContext], RigBackend]


def enclosure_backend(app: AppContext) -> RigBackend:
    from hangar.rigs.backends.enclosure import EnclosureBackend

    return EnclosureBackend(app.datadir.sub("rigs"), packs_root=app.settings.packs_root)


def make_rigs_part(backend_factory: BackendFactory = enclosure_backend) -> Part:
    async def start(app: AppContext) -> None:
        backend = backend_factory(app)
        manager = app.provide(RigManager(app, backend))
        # User code (shell steps, command agents) runs in rigs of the same backend.
        app.provide(RigConfinement(backend), as_type=Confinement)
        await manager.start()

    async def stop(app: AppContext) -> None:
        confinement = app.maybe_service(Confinement)
        if confinement is not None:
            await confinement.aclose()
        manager = app.maybe_service(RigManager)
        if manager is not None:
            await manager.stop()

    return Part(
        name="rigs",
        ops=[*RIG_OPS, *DEV_DOMAIN_OPS],
        routes=RIG_ROUTES,
        migrations=[MIGRATIONS, SERVER_MIGRATIONS],
        events=RIG_EVENTS,
        settings=IMAGE_SETTINGS,
        server_settings=[MEMORY_BUDGET_SPEC],
        start=start,
        stop=stop,
    )


RIGS_PART = make_rigs_part()
