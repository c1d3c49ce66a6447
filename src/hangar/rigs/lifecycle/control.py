"""Who holds control of a live rig: taking it, handing it back, and handing it back for a person who lost the
right to hold it.

Control is a person's claim on a rig's input: while someone holds it, others' mutating verbs are refused. A
person removed from the workspace, or moved below member, may no longer drive a rig, so whatever control they
held is handed back at once (at the membership event, and at every sweep for a change this process heard no
event of): otherwise the rig would stay locked to someone who can no longer release it, and take-overs by the
people still there would be refused until an admin forced it.
"""

from __future__ import annotations

from typing import Any, Literal

from hangar.core.context import AppContext
from hangar.rigs import hooks
from hangar.rigs.events import RigControlChanged
from hangar.rigs.live.notices import ControlNotice
from hangar.rigs.live.rigs import LiveRig, LiveRigs
from hangar.rigs.store import RigStore

ACCESS_ENDED = "accessEnded"


class RigControl:
    def __init__(self, app: AppContext, store: RigStore, rigs: LiveRigs) -> None:
        self.app = app
        self.store = store
        self.rigs = rigs

    async def set(
        self, live: LiveRig, *, by_user: str, by_label: str, user_id: str | None, verb: str, details: dict[str, Any]
    ) -> None:
        """Record the change (the rig's row and ``rigs.controlChanged`` in one transaction, then the action log)
        and tell the rig's lanes; ``by_user`` is whose act it is, ``by_label`` how the action log names them."""
        live.controller = user_id
        live.notify(ControlNotice(controller=user_id))
        self.rigs.touch(live)
        change: Literal["takeover", "handback"] = "takeover" if user_id is not None else "handback"
        async with self.app.bus.transaction(live.ws) as tx:
            await self.store.update(live.ws, live.id, conn=tx.conn, controller=user_id)
            await tx.publish(
                RigControlChanged(
                    workspace_id=live.ws, rig_id=live.id, space_id=live.space_id, change=change, user_id=by_user
                )
            )
        await self.store.append_action(live.ws, live.id, principal=by_label, verb=verb, outcome="ok", details=details)

    async def hand_back_if_lost(self, live: LiveRig) -> bool:
        """Hand control back when its holder is no longer member or above of the rig's workspace (their role as
        stored now); the server does it in their name. Whether it did."""
        holder = live.controller
        if holder is None or await hooks.may_use_lanes(self.app, live.ws, holder):
            return False
        await self.set(
            live,
            by_user=holder,
            by_label="server",
            user_id=None,
            verb="releaseControl",
            details={"forced": True, "reason": ACCESS_ENDED},
        )
        return True
