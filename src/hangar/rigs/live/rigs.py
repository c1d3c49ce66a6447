"""A rig while it lives in this process (its handle, boot, lanes, in-flight actions, control and forwards), and
``LiveRigs``, the set of them that the lifecycle's parts share.

The row in ``rig_sessions`` is the durable record; this is the working state the manager keeps beside it.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from pathlib import Path

from hangar.core.clock import Clock
from hangar.core.principal import Principal
from hangar.errors import NotFound
from hangar.rigs.backends.base import RigHandle
from hangar.rigs.egress.gate import EgressEvent
from hangar.rigs.live.notices import EgressNotice, PhaseNotice, RigNotice
from hangar.rigs.live.ports import PortForwards
from hangar.rigs.live.refusals import RecentRefusals
from hangar.rigs.live.terminals import KeptTerminals
from hangar.rigs.model import Phase, Surface, SurfaceLimits
from hangar.rigs.policy import RigState
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
    host_id: str | None = None  # the rig host running it (its credential's id); None: this server's own backend
    backend: str = "enclosure"  # the name of the backend running it (``rig_list``'s ``backend``)
    image_id: str | None = None  # a full VM's imported image
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
    watchers: set[asyncio.Queue[RigNotice]] = field(default_factory=set)  # open watch lanes
    refusals: RecentRefusals = field(default_factory=RecentRefusals)  # what its egress gate refused lately
    # Shells kept between lanes, per person and credential.
    terminals: KeptTerminals = field(default_factory=KeptTerminals)

    def notify(self, event: RigNotice) -> None:
        """Hand an activity event to every watch lane; a watcher too slow to keep up loses events, not the rig."""
        for queue in self.watchers:
            with contextlib.suppress(asyncio.QueueFull):
                queue.put_nowait(event)

    def notify_phase(self, reason: str | None = None) -> None:
        self.notify(PhaseNotice(phase=self.phase, detail=self.status_detail, reason=reason))

    def snapshot(self) -> RigSnapshot:
        return RigSnapshot(
            rig_id=self.id,
            surface=self.surface,
            phase=self.phase,
            status_detail=self.status_detail,
            controller=self.controller,
            ports=self.ports.rows(),
            egress=self.refusals.rows(),
        )

    def egress_refused(self, event: EgressEvent) -> None:
        """The rig's egress gate refused a connection: kept for its status, and told to its watchers (at most
        every ``refusals.REPEAT_S`` for the same host and rule)."""
        told = self.refusals.add(event)
        if told is not None:
            self.notify(EgressNotice(refusal=told))

    def state(self) -> RigState:
        return RigState(
            self.id,
            self.phase,
            self.limits,
            self.opened_at,
            self.last_active_at,
            # A booting rig has nothing measured yet and is about to hold memory: it counts at its ceiling.
            max(self.resident_mb, self.limits.memory_mb) if self.phase is Phase.provisioning else self.resident_mb,
            self.lanes,
            self.busy,
            self.controller is not None,
        )

    @property
    def target(self) -> str:
        return f"rig:{self.id}"

    @property
    def opener_user_id(self) -> str | None:
        """The user who opened the rig; None when a non-person (the server, an agent) did."""
        return self.opened_by.removeprefix("user:") if self.opened_by.startswith("user:") else None


# (workspace, space, surface, engine): one terminal per space, one browser per engine per space
ReuseKey = tuple[str, str, Surface, str | None]


def reuse_key(live: LiveRig) -> ReuseKey:
    return (live.ws, live.space_id, live.surface, live.engine)


class LiveRigs:
    """The rigs this process runs, by id and by the key an open reuses, and when each was last active.

    Opening adds to it, closing takes out, the sweep reads it: one object handed to each of them, so no part keeps
    a copy that could drift. The activity clock lives here because all three mark activity (an open that reuses,
    a close, a long boot's progress) and the sweep's idle rules read it.
    """

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._by_id: dict[str, LiveRig] = {}
        self._reuse: dict[ReuseKey, str] = {}

    def all(self) -> list[LiveRig]:
        """A copy, so callers may close rigs while they walk it."""
        return list(self._by_id.values())

    def states(self) -> list[RigState]:
        return [r.state() for r in self._by_id.values()]

    def get(self, rig_id: str) -> LiveRig | None:
        return self._by_id.get(rig_id)

    def find(self, ws: str, rig_id: str) -> LiveRig | None:
        """The rig when it lives here and belongs to workspace ``ws``: an id from another workspace finds nothing."""
        live = self._by_id.get(rig_id)
        return live if live is not None and live.ws == ws else None

    def live(self, ws: str, rig_id: str) -> LiveRig:
        live = self.find(ws, rig_id)
        if live is None:
            raise NotFound(f"no live rig {rig_id} in this workspace")
        return live

    def reusable(self, key: ReuseKey) -> LiveRig | None:
        """The rig an open of ``key`` would reuse, whatever its phase (the opener decides whether it may)."""
        return self._by_id.get(self._reuse.get(key, ""))

    def add(self, live: LiveRig) -> None:
        """Register a rig being provisioned; it becomes the one its key reuses."""
        self._by_id[live.id] = live
        self._reuse[reuse_key(live)] = live.id

    def forget(self, live: LiveRig) -> None:
        """Drop an ended rig; its key is freed only if it still names this rig (a later open may have taken it)."""
        self._by_id.pop(live.id, None)
        key = reuse_key(live)
        if self._reuse.get(key) == live.id:
            del self._reuse[key]

    def touch(self, live: LiveRig, principal: Principal | None = None) -> None:
        """Mark the rig active now (postponing parking and idle reaping), and by whom when someone drove it."""
        live.last_active_at = self._clock.monotonic()
        if principal is not None:
            live.last_actor = principal.label
