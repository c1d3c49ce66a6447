"""Which step attempts the step queue still holds open (PostgreSQL only): what another part asks before it closes
the work such an attempt began, since the attempt's next try on a worker finishes that work itself.

An agent run a worker drives for a step is keyed by the step's ``attempt_key``; when the worker dies, the run is
left ``running`` until the step's next try takes it over, so a server looking for abandoned agent runs leaves it
alone while the attempt's row is ``queued`` or ``claimed`` (``hangar.agents.runner``).
"""

from __future__ import annotations

from collections.abc import Iterable

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.pipelines.queue_tables import step_queue
from hangar.pipelines.step import run_key


def parse_attempt_key(key: str) -> tuple[str, str, int] | None:
    """``(runId, stepId, attempt)`` of an ``attempt_key`` (``pipeline:<runId>/<stepId>#<attempt>``), else None."""
    head, _, rest = key.partition("/")
    prefix = run_key("")
    if not head.startswith(prefix) or not rest:
        return None
    step_id, _, attempt = rest.rpartition("#")
    if not step_id or not attempt.isdigit():
        return None
    return head[len(prefix) :], step_id, int(attempt)


async def attempts_in_queue(server: AsyncEngine, workspace_id: str, attempt_keys: Iterable[str]) -> set[str]:
    """Those of ``attempt_keys`` whose step attempt has a ``queued`` or ``claimed`` row in the step queue."""
    wanted = {k: parsed for k in set(attempt_keys) if (parsed := parse_attempt_key(k)) is not None}
    if not wanted:
        return set()
    q = step_queue.c
    query = sa.select(q.run_id, q.step_id, q.attempt).where(
        q.workspace_id == workspace_id,
        q.status.in_(("queued", "claimed")),
        sa.tuple_(q.run_id, q.step_id, q.attempt).in_(list(wanted.values())),
    )
    async with server.connect() as conn:
        open_rows = {(r.run_id, r.step_id, r.attempt) for r in (await conn.execute(query)).all()}
    return {k for k, parsed in wanted.items() if parsed in open_rows}
