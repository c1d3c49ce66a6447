"""The retention part: retention passes over every database (``schedule``), their settings, their record
(``retention_runs``), the data directory's size (``storage``) and the ops that show them."""

from __future__ import annotations

from datetime import timedelta

from hangar.core.part import Part
from hangar.core.scheduled import scheduled_hooks
from hangar.retention.ops import RETENTION_OPS
from hangar.retention.schedule import PASS_EVERY, SPECS, TICK_S, RetentionSchedule, log
from hangar.retention.tables import MIGRATIONS

# The first look waits this long after a start: a pass writes to every database, and a server that is starting (or
# restarting in a loop) has better things to do than prune rows that waited an hour already.
FIRST_AFTER_S = 300.0


def make_retention_part(
    tick: float = TICK_S, every: timedelta = PASS_EVERY, first_after: float = FIRST_AFTER_S
) -> Part:
    """The part, checking every ``tick`` seconds whether a pass is due (one every ``every``; tests pass short ones),
    the first time ``first_after`` seconds after the server starts."""
    start, stop = scheduled_hooks(
        "retention-schedule",
        lambda ctx: ctx.provide(RetentionSchedule(ctx, tick, every)),
        log,
        first_after=first_after,
    )
    return Part(
        name="retention",
        ops=RETENTION_OPS,
        migrations=[MIGRATIONS],
        server_settings=SPECS,
        start=start,
        stop=stop,
    )


RETENTION_PART = make_retention_part()
