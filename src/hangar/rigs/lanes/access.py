"""Authorizing a lane request (file lane, terminal lane, live view): the device credential, a signature for exactly
this lane and rig minted for that same person, current workspace membership (member or above), and for what
changes the rig (drops, pastes, a terminal, the live view's input) the credential's own reach (a read-only
credential changes nothing) and the guardrails' read-only mode (``authorize_change``). Also the pace every lane
reads a request body at (``lane_body``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

from starlette.requests import Request

from hangar.core.context import AppContext
from hangar.core.principal import Principal, Role
from hangar.errors import Forbidden, Refused, Unavailable
from hangar.httpkit.requests import paced
from hangar.identity import IdentityService
from hangar.rigs.lanes.signing import Lane, LaneSigner
from hangar.rigs.lifecycle.manager import RigManager
from hangar.rigs.live.rigs import LiveRig
from hangar.rpc.guardrails import WORKSPACE_SCOPE, Guardrails, space_scope

# A body must keep coming: whole within its first BODY_GRACE_S seconds, or at least MIN_BYTES_PER_SECOND on
# average past them (a drop of 512 MB has 30 s + 8192 s), so a client that stalls or trickles holds no request
# open (408).
MIN_BYTES_PER_SECOND = 64 * 1024
BODY_GRACE_S = 30.0
RATE_SETTING = "the rig lanes' minimum upload rate"


@dataclass(frozen=True)
class LaneAccess:
    ws: str
    principal: Principal
    manager: RigManager
    live: LiveRig


async def authorize(
    app: AppContext, lane: Lane, rig_id: str, token: str | None, principal: Principal, *, mutating: bool
) -> LaneAccess:
    grant = LaneSigner(app.secrets, app.clock).verify(token, lane, rig_id)
    if grant.user_id != principal.user_id:
        raise Forbidden("this lane URL was minted for another person")
    principal.check_reach(grant.workspace_id, changes=mutating, action=f"the {lane} lane", op=False)
    role = await app.service(IdentityService).role_of(grant.workspace_id, principal.user_id)
    if role is None or role < Role.member:
        raise Forbidden(f"the {lane} lane needs membership (member or above) in the rig's workspace")
    manager = app.maybe_service(RigManager)
    if manager is None:
        raise Unavailable("the rig manager is not running on this server")
    live = await manager.get_live(grant.workspace_id, rig_id)
    principal.check_space(live.space_id, action=f"the {lane} lane", subject=f"rig {rig_id}")
    access = LaneAccess(grant.workspace_id, principal, manager, live)
    if mutating:
        await authorize_change(access, lane, f"the {lane} lane")
    return access


async def authorize_change(access: LaneAccess, lane: Lane, what: str) -> None:
    """A change to the rig through a lane, whether the lane is one that changes (a drop, a paste, a terminal) or
    one that carries changes beside what it shows (the live view's input): authorized per credential (a
    read-only credential, or one limited to another workspace, changes nothing, whoever its person is and
    whatever they hold through another credential), then the guardrails' read-only mode."""
    access.principal.check_reach(access.ws, changes=True, action=what, op=False)
    await refuse_if_read_only(access.manager.app, access.ws, access.live.space_id, lane)


async def still_allowed(app: AppContext, ws: str, token: str) -> None:
    """What an open lane re-checks while it runs: the credential still works and its person is still a member
    (or above) of the rig's workspace."""
    principal = await app.service(IdentityService).authenticate(token, touch=False)
    principal.check_reach(ws, changes=False, action="the lane", op=False)
    role = await app.service(IdentityService).role_of(ws, principal.user_id)
    if role is None or role < Role.member:
        raise Forbidden("your membership of the rig's workspace ended; the lane is closed")


async def refuse_if_read_only(app: AppContext, ws: str, space_id: str, lane: Lane) -> None:
    """Lanes are routes, not ops, so the guardrails' read-only mode is checked here (at every use, so a URL
    minted before the mode was set does not outlive it)."""
    guardrails = app.maybe_service(Guardrails)
    if guardrails is None:
        return
    engine = await app.dbs.workspace(ws)
    for scope, where in ((WORKSPACE_SCOPE, "this workspace"), (space_scope(space_id), "this space")):
        if (await guardrails.get(engine, ws, scope)).read_only:
            raise Refused(f"the {lane} lane refused: {where} is in read-only mode, which denies changes to rigs")


def lane_body(request: Request, limit: int) -> AsyncIterator[bytes]:
    """A lane's request body as it arrives, at most ``limit`` bytes, kept coming at the lanes' pace (408 when
    it stalls). The pace is read when called: a test (or an operator's patch) may change it."""
    return paced(request, limit, MIN_BYTES_PER_SECOND, BODY_GRACE_S, RATE_SETTING)
