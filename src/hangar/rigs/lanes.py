"""Authorizing a lane request (file lane, terminal lane): the device credential, a signature for exactly this
lane and rig minted for that same person, and current workspace membership (member or above)."""

from __future__ import annotations

from dataclasses import dataclass

from hangar.core.context import AppContext
from hangar.errors import Forbidden, Unavailable
from hangar.identity.roles import Role
from hangar.rigs.live import LiveRig
from hangar.rigs.manager import RigManager
from hangar.rigs.signing import Lane, LaneSigner
from hangar.rpc.context import Principal


@dataclass(frozen=True)
class LaneAccess:
    ws: str
    principal: Principal
    manager: RigManager
    live: LiveRig


async def authorize(app: AppContext, lane: Lane, rig_id: str, token: str | None, principal: Principal) -> LaneAccess:
    grant = LaneSigner(app.secrets, app.clock).verify(token, lane, rig_id)
    if grant.user_id != principal.user_id:
        raise Forbidden("this lane URL was minted for another person")
    role = await app.identity.role_of(grant.workspace_id, principal.user_id)
    if role is None or role < Role.member:
        raise Forbidden(f"the {lane} lane needs membership (member or above) in the rig's workspace")
    manager = app.maybe_service(RigManager)
    if manager is None:
        raise Unavailable("the rig manager is not running on this server")
    live = await manager.get_live(grant.workspace_id, rig_id)
    return LaneAccess(grant.workspace_id, principal, manager, live)
