"""Input on a live view (browsers and desktops alike): whether one event may reach the rig, and what a person
without control is told."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from starlette.websockets import WebSocket

from hangar.rigs.lanes.access import LaneAccess, authorize_change
from hangar.rigs.live.rigs import LiveRig
from hangar.rpc.access import Revocable

if TYPE_CHECKING:
    from hangar.rigs.lanes.liveview import InputCounts


def send_json(ws: WebSocket, payload: dict[str, Any]) -> Any:
    return ws.send_text(json.dumps(payload))


class InputGate:
    """Whether one input event of a live view may reach the rig, asked at each event."""

    def __init__(self, ws: WebSocket, access: LaneAccess, live: LiveRig, counts: InputCounts, guard: Revocable):
        self.ws, self.access, self.live, self.counts, self.guard = ws, access, live, counts, guard
        self.told_readonly = False

    async def admit(self) -> bool:
        """True when the person holds control and may still change the rig: they still have access (the lane ends
        otherwise), through a credential that may change things (whatever its person holds through another one),
        outside read-only mode (set since the lane opened, too). Input from someone without control is counted as
        ignored, and they are told once (until they hold control again) that the view is read-only."""
        principal = self.access.principal
        if self.live.controller != principal.user_id:
            self.counts.ignored += 1
            if not self.told_readonly:
                self.told_readonly = True
                await send_json(self.ws, {"type": "readonly", "message": readonly_message(self.live)})
            return False
        self.told_readonly = False
        await self.guard.admit()
        await authorize_change(self.access, "watch", "input on the live view")
        self.live.last_active_at = self.access.manager.app.clock.monotonic()
        self.live.last_actor = principal.label
        return True


def readonly_message(live: LiveRig) -> str:
    if live.controller is None:
        return "take control to send input; until then the live view only shows the screen"
    return "another person holds control; your input is ignored until they hand it back"
