"""Two stop requests for one run at the same moment (two servers, or a server and a command): both succeed and
the first stands (who asked first, and when), on either dialect."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa

from hangar.core.datadir import DataDir
from hangar.core.db import Databases
from hangar.core.runcontrol import STOP_NAME, RunControl
from hangar.core.tables import run_stop_requests
from hangar.server.parts import all_parts
from tests.support.dialects import DIALECTS, database_url

AT = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


@contextlib.asynccontextmanager
async def two_controls(
    tmp_path: Path, dialect: str, request: pytest.FixtureRequest, kind: str
) -> AsyncIterator[tuple[Databases, RunControl, RunControl]]:
    """One workspace ``w1`` and two processes' run controls (each its own connections), as two servers."""
    datadir = DataDir(tmp_path / "data").ensure()
    dbs = Databases(datadir, [m for p in all_parts() for m in p.migrations], postgresql=database_url(dialect, request))
    await dbs.open()
    try:
        await dbs.create_workspace("w1")
        first, second = (RunControl(tmp_path / "runs", kind=kind, on_stop=lambda _r: True, dbs=dbs) for _ in "ab")
        yield dbs, first, second
    finally:
        await dbs.aclose()


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_two_concurrent_stops_both_succeed_and_the_first_stands(
    tmp_path: Path, dialect: str, request: pytest.FixtureRequest
) -> None:
    async with two_controls(tmp_path, dialect, request, "agent run") as (dbs, first, second):

        async def here() -> bool:
            return True

        async def ended() -> bool:
            return True

        async def stood(run_id: str) -> str:
            if dbs.postgresql_url is None:
                return str(json.loads((tmp_path / "runs" / run_id / STOP_NAME).read_text())["by"])
            engine = await dbs.workspace("w1")
            t = run_stop_requests
            async with engine.connect() as conn:
                rows = (await conn.execute(sa.select(t.c.requested_by).where(t.c.run_id == run_id))).all()
            assert len(rows) == 1
            return str(rows[0][0])

        for attempt in range(5):  # several runs: the collision needs both to look before either writes
            run_id = f"r{attempt}"
            await asyncio.gather(
                first.stop(run_id, by="first", at=AT, stop_here=here, ended=ended, workspace_id="w1"),
                second.stop(run_id, by="second", at=AT + timedelta(seconds=1), stop_here=here, ended=ended,
                            workspace_id="w1"),
            )  # fmt: skip
            # Whichever wrote first stands (they raced), and a later request leaves it.
            winner = await stood(run_id)
            assert winner in ("first", "second")
            await second.stop(run_id, by="third", at=AT, stop_here=here, ended=ended, workspace_id="w1")
            assert await stood(run_id) == winner


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_a_run_another_process_drives_is_driven_elsewhere_until_it_lets_go(
    tmp_path: Path, dialect: str, request: pytest.FixtureRequest
) -> None:
    """What ``hangar pipeline run`` asks before it reports a run another process took over (``_settled``)."""
    async with two_controls(tmp_path, dialect, request, "pipeline run") as (_dbs, mine, theirs):
        assert not await mine.driven_elsewhere("r1")  # nobody drives it
        assert await theirs.try_take("r1", workspace_id="w1") is not None
        assert await mine.driven_elsewhere("r1")
        assert not await theirs.driven_elsewhere("r1")  # its own driver drives it here, not elsewhere
        theirs.release("r1")
        await asyncio.gather(*theirs._releasing)  # a lease goes on a task of its own
        assert not await mine.driven_elsewhere("r1")
        assert await mine.try_take("r1", workspace_id="w1") is not None
        assert not await mine.driven_elsewhere("r1") and await theirs.driven_elsewhere("r1")
        mine.release("r1")
        await asyncio.gather(*mine._releasing)
        await mine.aclose()
        await theirs.aclose()
