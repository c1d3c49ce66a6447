"""Pure lifecycle decisions: when to park, when to reap, whom to evict. No I/O, no clock of its own.

The manager snapshots its live rigs into ``RigState`` values with times read from the injectable clock
(monotonic seconds) and applies what these functions decide. Keeping the rules here lets them be tested
directly, row by row against the spec:

- the hard TTL closes a rig (``ttlExpired``) even while a lane pins it;
- a rig idle for one idle window is parked, for two it is reaped (``idleTimeout``);
- an open terminal or watch lane pins a rig against parking and idle reaping; so does an action in flight;
- the resident-memory budget counts every live rig (parked ones still hold their memory); eviction is
  least-recently-used and never takes a rig someone is driving, watching or has a terminal open in.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from hangar.rigs.model import LIVE_PHASES, CloseReason, Phase, SurfaceLimits


@dataclass(frozen=True)
class RigState:
    rig_id: str
    phase: Phase
    limits: SurfaceLimits
    opened_at: float  # monotonic seconds
    last_active_at: float  # monotonic seconds of the last action, lane activity or wake
    resident_mb: int
    lanes: int = 0  # open terminal or watch lanes
    busy: int = 0  # actions in flight
    controlled: bool = False  # a person holds control

    @property
    def pinned(self) -> bool:
        """Pinned against parking and idle reaping (not against the TTL)."""
        return self.lanes > 0 or self.busy > 0

    @property
    def in_use(self) -> bool:
        """Someone is driving, watching or has a terminal open: never evicted."""
        return self.pinned or self.controlled


@dataclass(frozen=True)
class Park:
    rig_id: str


@dataclass(frozen=True)
class Reap:
    rig_id: str
    reason: CloseReason
    cause: str  # "ttl", "idle" or "memory": why, in words a log line can carry


Decision = Park | Reap


def lifecycle(rigs: Iterable[RigState], now: float) -> list[Decision]:
    """What the periodic sweep must do to each live rig at monotonic time ``now``."""
    out: list[Decision] = []
    for r in rigs:
        if r.phase not in LIVE_PHASES:
            continue
        if now - r.opened_at >= r.limits.ttl_s:
            out.append(Reap(r.rig_id, CloseReason.ttl_expired, "ttl"))
            continue
        # A booting rig is not idle, and a pinned one is in use.
        if r.phase is Phase.provisioning or r.pinned:
            continue
        idle = now - r.last_active_at
        if idle >= r.limits.reap_after_s:
            out.append(Reap(r.rig_id, CloseReason.idle_timeout, "idle"))
        elif idle >= r.limits.idle_window_s and r.phase is Phase.ready:
            out.append(Park(r.rig_id))
    return out


@dataclass(frozen=True)
class Eviction:
    victims: tuple[str, ...]  # least recently used first
    fits: bool  # whether the budget holds after evicting the victims
    used_mb: int  # resident MB of live rigs before eviction


def evict(rigs: Sequence[RigState], budget_mb: int, need_mb: int = 0) -> Eviction:
    """Which rigs to close so that live resident memory plus ``need_mb`` fits in ``budget_mb``.

    Candidates are live rigs nobody uses, least recently active first. When even evicting every candidate
    would not make room, ``fits`` is False and the victims are those that get closest.
    """
    live = [r for r in rigs if r.phase in LIVE_PHASES]
    used = sum(r.resident_mb for r in live)
    remaining = used + need_mb
    if remaining <= budget_mb:
        return Eviction((), True, used)
    candidates = sorted(
        (r for r in live if not r.in_use and r.phase is not Phase.provisioning),
        key=lambda r: (r.last_active_at, r.rig_id),
    )
    victims: list[str] = []
    for r in candidates:
        if remaining <= budget_mb:
            break
        victims.append(r.rig_id)
        remaining -= r.resident_mb
    return Eviction(tuple(victims), remaining <= budget_mb, used)
