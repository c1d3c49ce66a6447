"""Lifecycle decisions without I/O: parking, reaping at twice the idle window, the TTL, LRU eviction."""

from __future__ import annotations

from dataclasses import replace

from hangar.rigs.model import LIMITS, CloseReason, Phase, Surface
from hangar.rigs.policy import Park, Reap, RigState, evict, lifecycle

TERM = LIMITS[Surface.terminal]
WINDOW = TERM.idle_window_s


def rig(rig_id: str = "r1", **kw: object) -> RigState:
    base = RigState(rig_id, Phase.ready, TERM, opened_at=0.0, last_active_at=0.0, resident_mb=10)
    return replace(base, **kw)  # type: ignore[arg-type]


def test_active_rig_is_left_alone() -> None:
    assert lifecycle([rig()], WINDOW - 1) == []


def test_idle_for_one_window_parks() -> None:
    assert lifecycle([rig()], WINDOW) == [Park("r1")]


def test_parked_rig_is_not_parked_again_and_is_reaped_at_twice_the_window() -> None:
    parked = rig(phase=Phase.parked)
    assert lifecycle([parked], WINDOW * 1.5) == []
    assert lifecycle([parked], 2 * WINDOW) == [Reap("r1", CloseReason.idle_timeout, "idle")]


def test_ready_rig_idle_past_twice_the_window_is_reaped_directly() -> None:
    assert lifecycle([rig()], 2 * WINDOW + 5) == [Reap("r1", CloseReason.idle_timeout, "idle")]


def test_an_open_lane_pins_against_parking_and_idle_reaping() -> None:
    assert lifecycle([rig(lanes=1)], 3 * WINDOW) == []


def test_an_action_in_flight_pins_too() -> None:
    assert lifecycle([rig(busy=1)], 3 * WINDOW) == []


def test_ttl_applies_even_when_pinned() -> None:
    assert lifecycle([rig(lanes=2, last_active_at=TERM.ttl_s)], TERM.ttl_s) == [
        Reap("r1", CloseReason.ttl_expired, "ttl")
    ]


def test_provisioning_is_not_idle_but_ttl_still_counts() -> None:
    booting = rig(phase=Phase.provisioning)
    assert lifecycle([booting], 3 * WINDOW) == []
    assert lifecycle([booting], TERM.ttl_s)[0] == Reap("r1", CloseReason.ttl_expired, "ttl")


def test_final_phases_are_ignored() -> None:
    assert lifecycle([rig(phase=Phase.closed), rig("r2", phase=Phase.failed)], TERM.ttl_s * 2) == []


def test_under_budget_nothing_is_evicted() -> None:
    e = evict([rig(resident_mb=100), rig("r2", resident_mb=100)], budget_mb=300)
    assert e.victims == () and e.fits and e.used_mb == 200


def test_eviction_is_least_recently_used_first_and_stops_when_it_fits() -> None:
    rigs = [
        rig("new", last_active_at=30.0, resident_mb=100),
        rig("old", last_active_at=10.0, resident_mb=100),
        rig("mid", last_active_at=20.0, resident_mb=100),
    ]
    e = evict(rigs, budget_mb=250)
    assert e.victims == ("old",) and e.fits
    e = evict(rigs, budget_mb=250, need_mb=100)
    assert e.victims == ("old", "mid") and e.fits


def test_parked_rigs_count_against_the_budget_and_can_be_evicted() -> None:
    rigs = [rig("p", phase=Phase.parked, resident_mb=200, last_active_at=50.0), rig("a", resident_mb=100)]
    e = evict(rigs, budget_mb=250)
    assert e.used_mb == 300
    assert e.victims == ("a",)  # least recently used wins over "parked"


def test_eviction_never_takes_a_rig_in_use() -> None:
    rigs = [
        rig("watched", lanes=1, last_active_at=0.0, resident_mb=100),
        rig("driven", controlled=True, last_active_at=1.0, resident_mb=100),
        rig("busy", busy=1, last_active_at=2.0, resident_mb=100),
        rig("idle", last_active_at=3.0, resident_mb=100),
    ]
    e = evict(rigs, budget_mb=150)
    assert e.victims == ("idle",)
    assert not e.fits


def test_closed_rigs_do_not_count() -> None:
    e = evict([rig(phase=Phase.closed, resident_mb=10_000)], budget_mb=100)
    assert e.used_mb == 0 and e.fits
