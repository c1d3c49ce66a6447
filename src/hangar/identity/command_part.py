"""The identity part as a command opens it: its tables, events, server settings, start and stop, without the ops
and routes only a server serves (``hangar.identity.part`` adds them), so that an admin command does not import
them (issue 30: admin commands start quickly)."""

from __future__ import annotations

from hangar.core.confine import HostExecSwitch
from hangar.core.context import AppContext
from hangar.core.lapse import LAPSE_SETTING
from hangar.core.part import Part
from hangar.identity.creation import CREATORS_SPEC
from hangar.identity.events import IDENTITY_EVENTS
from hangar.identity.pairing import Pairing
from hangar.identity.service import IdentityService
from hangar.identity.tables import MIGRATIONS


async def _start(ctx: AppContext) -> None:
    identity = ctx.service(IdentityService)
    ctx.provide(Pairing(ctx.dbs.server, identity, ctx.clock))
    ctx.provide(HostExecSwitch(identity.get_setting))  # server settings live here
    ctx.dbs.read_lapse = lambda: identity.get_setting(LAPSE_SETTING)  # the driver leases' lapse (PostgreSQL)


async def _stop(ctx: AppContext) -> None:
    await ctx.service(IdentityService).flush()


IDENTITY_COMMAND_PART = Part(
    name="identity",
    migrations=[MIGRATIONS],
    events=IDENTITY_EVENTS,
    server_settings=[CREATORS_SPEC],
    start=_start,
    stop=_stop,
)
