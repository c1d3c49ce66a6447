"""Which step attempts the step queue still holds open (PostgreSQL only): what another part asks before it closes
the work such an attempt began, since the attempt's next try on a worker finishes that work itself.

An agent run a worker drives for a step is keyed by the step's ``attempt_key``; when the worker dies, the run is
left ``running`` until the step's next try takes it over, so a server looking for abandoned agent runs leaves it
alone while the attempt's row is ``queued`` or ``claimed`` (``hangar.agents.runner``).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.pipelines.queue_tables import step_queue, worker_credentials, workers
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


def parse_try_key(key: str) -> tuple[str, str, int, int] | None:
    """``(runId, stepId, attempt, try)`` of a try's key (``<attemptKey>.<try>``, ``StepContext.try_key``)."""
    attempt_key, _, try_no = key.rpartition(".")
    parsed = parse_attempt_key(attempt_key) if try_no.isdigit() else None
    return (*parsed, int(try_no)) if parsed is not None else None


async def live_claim(server: AsyncEngine, workspace_id: str, try_key: str, credential_id: str) -> datetime | None:
    """When the claim ``try_key`` names lapses, if it is the current try of a ``claimed`` row, held by a worker
    that claimed with ``credential_id`` (still not revoked), its lease not lapsed; else None. What a server asks
    before it speaks for a worker's agent step (``hangar.agents.worker_grants``)."""
    parsed = parse_try_key(try_key)
    if parsed is None:
        return None
    run_id, step_id, attempt, try_no = parsed
    q, w, wc = step_queue.c, workers.c, worker_credentials.c
    query = (
        sa.select(q.lease_until)
        .join_from(step_queue, workers, w.id == q.worker_id)
        .join(worker_credentials, wc.id == w.credential_id)
        .where(
            q.workspace_id == workspace_id,
            q.run_id == run_id,
            q.step_id == step_id,
            q.attempt == attempt,
            q.tries == try_no,
            q.status == "claimed",
            q.lease_until > sa.func.now(),
            w.credential_id == credential_id,
            wc.revoked_at.is_(None),
        )
    )
    async with server.connect() as conn:
        lease: datetime | None = (await conn.execute(query)).scalar()
    return lease
