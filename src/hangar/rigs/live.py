"""A rig while it lives in this process: its handle, boot, lanes, in-flight actions, control and forwards.

The row in ``rig_sessions`` is the durable record; this is the working state the manager keeps beside it.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hangar.rigs.backends.base import RigHandle
from hangar.rigs.model import Phase, Surface, SurfaceLimits
from hangar.rigs.policy import RigState
from hangar.rigs.ports import PortForwards
from hangar.rigs.results import RigSnapshot


@dataclass(eq=False)
class LiveRig:
    ws: str
    id: str
    space_id: str
    surface: Surface
    engine: str | None
    limits: SurfaceLimits
    opened_by: str  # principal label
    home: Path
    opened_at: float  # monotonic
    last_active_at: float
    phase: Phase = Phase.provisioning
    status_detail: str = "starting"
    notice: str = ""  # what the rig's status says once ready (a custom image it could not boot)
    handle: RigHandle | None = None
    boot: asyncio.Task[RigHandle] | None = None
    watcher: asyncio.Task[None] | None = None
    controller: str | None = None  # user id
    last_actor: str | None = None  # principal label of whoever drove it last
    resident_mb: int = 0
    lanes: int = 0
    busy: int = 0
    ports: PortForwards = field(default_factory=PortForwards)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    ended: asyncio.Event = field(default_factory=asyncio.Event)  # set once closed or failed
    watchers: set[asyncio.Queue[dict[str, Any]]] = field(default_factory=set)  # open watch lanes

    def notify(self, event: dict[str, Any]) -> None:
        """Hand an activity event to every watch lane; a watcher too slow to keep up loses events, not the rig."""
        for queue in self.watchers:
            with contextlib.suppress(asyncio.QueueFull):
                queue.put_nowait(event)

    def notify_phase(self, reason: str | None = None) -> None:
        self.notify({"type": "phase", "phase": self.phase.value, "detail": self.status_detail, "reason": reason})

    def snapshot(self) -> RigSnapshot:
        return RigSnapshot(
            rig_id=self.id,
            surface=self.surface,
            phase=self.phase,
            status_detail=self.status_detail,
            controller=self.controller,
            ports=self.ports.rows(),
        )

    def state(self) -> RigState:
        return RigState(
            self.id,
            self.phase,
            self.limits,
            self.opened_at,
            self.last_active_at,
            self.resident_mb,
            self.lanes,
            self.busy,
            self.controller is not None,
        )

    @property
    def target(self) -> str:
        return f"rig:{self.id}"
