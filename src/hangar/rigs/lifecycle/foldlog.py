"""Repeated screenshots folded into one action-log row.

A client with no live lane for a rig (the web client's phone view) polls the ``screenshot`` verb every second or
few; one row per poll would bury the actions a reviewer reads. The log is append-only (the database refuses edits),
so a row cannot be counted up after it is written: instead this process holds the run of a principal's successful
screenshots on a rig and writes it as ONE row when the run ends, with ``count``, ``firstAt`` and ``lastAt`` in its
details (the row's own ``at`` is the first screenshot's time, so the log stays in order).

A run ends, and its row is written, when:
- the same principal takes a screenshot more than ``window_s`` after the run's first one (that starts a new run);
- any other action is logged on the rig (its row comes after the run's, so order is kept);
- the rig's log is read (``rig.actionLog`` shows what happened up to now);
- the periodic sweep finds the window over, and when the server stops.

A window of 0 writes every screenshot as a row of its own (``count`` 1). Everyone's screenshots fold the same way,
a person's or an agent's. A refused or failed screenshot is never folded.
A process that dies loses at most the tally of the runs it held (one window plus a sweep interval).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from hangar.config import RIG_SCREENSHOT_FOLD_SECONDS
from hangar.core.clock import Clock

FOLD_WINDOW_S = RIG_SCREENSHOT_FOLD_SECONDS  # the default window (``HANGAR_RIG_SCREENSHOT_FOLD_SECONDS``)
FOLDED_VERBS = frozenset({"screenshot"})


@dataclass
class Run:
    """A principal's screenshots on one rig not yet written: the last one's details, how many, first and last."""

    principal: str
    verb: str
    details: dict[str, Any]
    first_at: datetime
    last_at: datetime
    started: float  # the clock's monotonic time of the first one
    count: int = 1

    def row_details(self) -> dict[str, Any]:
        return {
            **self.details,
            "count": self.count,
            "firstAt": self.first_at.isoformat(),
            "lastAt": self.last_at.isoformat(),
        }


Key = tuple[str, str]  # (workspace, rig)


class ScreenshotFold:
    def __init__(self, clock: Clock, window_s: float = FOLD_WINDOW_S) -> None:
        self._clock = clock
        self.window_s = window_s
        self._runs: dict[Key, dict[tuple[str, str], Run]] = {}

    def add(self, ws: str, rig_id: str, principal: str, verb: str, details: dict[str, Any]) -> Run | None:
        """Count one screenshot; returns the run it ended (to be written now) when it fell past the window."""
        runs = self._runs.setdefault((ws, rig_id), {})
        now, mono = self._clock.now(), self._clock.monotonic()
        run = runs.get((principal, verb))
        if run is not None and self.window_s > 0 and mono - run.started <= self.window_s:
            run.count += 1
            run.last_at = now
            run.details = dict(details)
            return None
        runs[(principal, verb)] = Run(principal, verb, dict(details), now, now, mono)
        return run

    def take(self, ws: str, rig_id: str) -> list[Run]:
        """Every run held for the rig, oldest first, forgotten here (their rows are written by the caller)."""
        return sorted(self._runs.pop((ws, rig_id), {}).values(), key=lambda r: r.started)

    def lapsed(self) -> list[tuple[str, str, Run]]:
        """The runs whose window is over, taken out, oldest first."""
        mono = self._clock.monotonic()
        out: list[tuple[str, str, Run]] = []
        for (ws, rig_id), runs in list(self._runs.items()):
            for key, run in list(runs.items()):
                if mono - run.started > self.window_s:
                    out.append((ws, rig_id, runs.pop(key)))
            if not runs:
                del self._runs[(ws, rig_id)]
        return sorted(out, key=lambda item: item[2].started)

    def all(self) -> list[tuple[str, str, Run]]:
        out = [(ws, rig_id, run) for (ws, rig_id), runs in self._runs.items() for run in runs.values()]
        self._runs.clear()
        return sorted(out, key=lambda item: item[2].started)
