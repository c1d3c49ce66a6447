"""Agent run records: what was asked, by whom, how it ended, and the harvested ``submit_output`` payload."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.agents import tables
from hangar.agents.events import RunOutcome
from hangar.core.context import AppContext
from hangar.errors import NotFound
from hangar.pipelines import attempt_keys_prefix


class RunStatus(StrEnum):
    running = "running"
    finished = "finished"  # with an outcome


@dataclass(frozen=True)
class Run:
    id: str
    agent_id: str
    space_id: str
    status: RunStatus
    outcome: RunOutcome | None
    error: str | None
    prompt: str
    output_schema: dict[str, Any] | None
    output: Any
    has_output: bool
    output_error: str | None
    turns: int
    dispatched_by: str
    created_at: datetime
    finished_at: datetime | None
    owner: str | None = None
    first_seq: int | None = None
    read_only: bool = False  # the space's folder is the run's to read, never to change

    @classmethod
    def of_row(cls, row: Mapping[Any, Any]) -> Run:
        outcome = row["outcome"]
        return cls(
            **{
                **row,
                "status": RunStatus(row["status"]),
                "outcome": None if outcome is None else RunOutcome(outcome),
            }
        )


class RunStore:
    def __init__(self, app: AppContext) -> None:
        self._app = app

    async def insert(self, workspace_id: str, **values: Any) -> None:
        engine = await self._app.dbs.workspace(workspace_id)
        async with engine.begin() as conn:
            await conn.execute(sa.insert(tables.agent_runs).values(**values))

    @staticmethod
    async def update(conn: AsyncConnection, run_id: str, **values: Any) -> None:
        """Within the caller's transaction (the run's end and its events commit together)."""
        await conn.execute(sa.update(tables.agent_runs).where(tables.agent_runs.c.id == run_id).values(**values))

    @staticmethod
    async def close_running(conn: AsyncConnection, run_id: str, **values: Any) -> bool:
        """Within the caller's transaction: record a run as finished only if it is still ``running``; whether
        it was."""
        t = tables.agent_runs
        still_running = sa.update(t).where(t.c.id == run_id, t.c.status == RunStatus.running)
        done = await conn.execute(still_running.values(status=RunStatus.finished, **values))
        return bool(done.rowcount)

    async def get(self, workspace_id: str, run_id: str) -> Run:
        engine = await self._app.dbs.workspace(workspace_id)
        t = tables.agent_runs
        async with engine.connect() as conn:
            row = (await conn.execute(sa.select(t).where(t.c.id == run_id))).mappings().first()
        if row is None:
            raise NotFound(f"runId: run {run_id} does not exist in this workspace")
        return Run.of_row(row)

    async def find(self, workspace_id: str, run_id: str) -> Run | None:
        """The run recorded under ``run_id``, or None."""
        try:
            return await self.get(workspace_id, run_id)
        except NotFound:
            return None

    async def all(
        self,
        workspace_id: str,
        *,
        space_id: str | None = None,
        agent_id: str | None = None,
        status: RunStatus | None = None,
        dispatched_by: str | None = None,
        limit: int = 200,
    ) -> list[Run]:
        t = tables.agent_runs
        q = sa.select(t).order_by(t.c.created_at.desc(), t.c.id).limit(limit)
        if space_id is not None:
            q = q.where(t.c.space_id == space_id)
        if agent_id is not None:
            q = q.where(t.c.agent_id == agent_id)
        if status is not None:
            q = q.where(t.c.status == status)
        if dispatched_by is not None:
            q = q.where(t.c.dispatched_by == dispatched_by)
        engine = await self._app.dbs.workspace(workspace_id)
        async with engine.connect() as conn:
            rows = (await conn.execute(q)).mappings().all()
        return [Run.of_row(r) for r in rows]

    async def running_for_pipeline(self, workspace_id: str, pipeline_run_id: str) -> list[Run]:
        """Running runs dispatched by the steps of one pipeline run (``dispatched_by`` is the step's
        ``attempt_key``, which starts with the run's ``attempt_keys_prefix``)."""
        t = tables.agent_runs
        prefix = attempt_keys_prefix(pipeline_run_id)
        q = sa.select(t).where(t.c.status == RunStatus.running, t.c.dispatched_by.startswith(prefix, autoescape=True))
        engine = await self._app.dbs.workspace(workspace_id)
        async with engine.connect() as conn:
            rows = (await conn.execute(q)).mappings().all()
        return [Run.of_row(r) for r in rows]

    async def running(self, workspace_id: str) -> list[Run]:
        return await self.all(workspace_id, status=RunStatus.running, limit=100_000)

    async def needed_events_after(self, workspace_id: str) -> int | None:
        """The seq after which a running run's events are still needed (its turn events are read back from its
        first: ``AgentRunner.events``); None when no run is running."""
        t = tables.agent_runs
        engine = await self._app.dbs.workspace(workspace_id)
        q = sa.select(sa.func.min(sa.func.coalesce(t.c.first_seq, 1))).where(t.c.status == RunStatus.running)
        async with engine.connect() as conn:
            first = (await conn.execute(q)).scalar()
        return None if first is None else int(first) - 1
