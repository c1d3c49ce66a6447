"""The identity part: users, workspaces, members, devices, pairing."""

from __future__ import annotations

from hangar.core.confine import HostExecSwitch
from hangar.core.context import AppContext
from hangar.core.lapse import LAPSE_SETTING
from hangar.core.part import Part
from hangar.identity.creation import CREATORS_SPEC
from hangar.identity.events import IDENTITY_EVENTS
from hangar.identity.ops import IDENTITY_OPS
from hangar.identity.pairing import Pairing
from hangar.identity.routes import IDENTITY_ROUTES
from hangar.identity.service import IdentityService
from hangar.identity.tables import MIGRATIONS


async def _start(ctx: AppContext) -> None:
    identity = ctx.service(IdentityService)
    ctx.provide(Pairing(ctx.dbs.server, identity, ctx.clock))
    ctx.provide(HostExecSwitch(identity.get_setting))  # server settings live here
    ctx.dbs.read_lapse = lambda: identity.get_setting(LAPSE_SETTING)  # the driver leases' lapse (PostgreSQL)


async def _stop(ctx: AppContext) -> None:
    await ctx.service(IdentityService).flush()


IDENTITY_PART = Part(
    name="identity",
    ops=IDENTITY_OPS,
    routes=IDENTITY_ROUTES,
    migrations=[MIGRATIONS],
    events=IDENTITY_EVENTS,
    server_settings=[CREATORS_SPEC],
    start=_start,
    stop=_stop,
)
