"""The lease lapse, a server setting (``leases.lapseSeconds``): how long a process keeps driving its runs through a
broken lease connection before it gives them up (``hangar.core.leases``), and so, with the checks that bound how
late it notices, how long another process waits before it takes a run whose lease it sees free.

One value for every process of a database (a server setting, in the database): the holder's lapse and the
taker's wait must agree, or a run could have two drivers. Bounds: at least 2 s (two heartbeats: a single missed
check is not yet a lost connection) and at most 300 s (a take-over of a dead server's runs waits the lapse plus
about 16 s: longer than five minutes leaves work stalled past what a failover is for). Kept apart from
``hangar.core.leases`` so the kernel part declares it without loading PostgreSQL's driver.
"""

from __future__ import annotations

from typing import Any

from hangar.core.settings import SettingSpec, strict_int

LAPSE_SETTING = "leases.lapseSeconds"
LAPSE_DEFAULT_S = 10
LAPSE_MIN_S = 2
LAPSE_MAX_S = 300

LAPSE_SPEC = SettingSpec(
    LAPSE_SETTING,
    f"seconds a process drives its runs through a broken lease connection before giving them up, and that "
    f"another waits (plus about 16 s) before taking them over (PostgreSQL; {LAPSE_MIN_S} to {LAPSE_MAX_S}, "
    f"default {LAPSE_DEFAULT_S})",
    strict_int(LAPSE_SETTING, LAPSE_MIN_S, LAPSE_MAX_S),
)


def lapse_of(stored: Any) -> float:
    """The lapse a stored value means: the default when unset, or when it does not hold to today's bounds."""
    if isinstance(stored, int) and not isinstance(stored, bool) and LAPSE_MIN_S <= stored <= LAPSE_MAX_S:
        return float(stored)
    return float(LAPSE_DEFAULT_S)
