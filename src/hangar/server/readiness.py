"""``GET /readyz``: 200 ``{"status": "ready"}`` only when every database answers and stands at the head of its
migrations, else 503 with what is not ready (CONTRACTS.md section 11); ``/healthz`` says only that the process lives.

A load balancer asks without a credential, so the reason names no workspace: the log line written with it does.
Every workspace database is asked, through the engines the server already holds (its event tail opens them all),
so a database restored from an older backup under a running server, or one replaced by a damaged file, turns
the server not ready until it is put right.

Anyone may ask, and a check reads every workspace database, so an answer is kept for ``ANSWER_KEPT_S`` and
callers arriving while a check runs share it: a flood of requests costs one check every two seconds.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.requests import Request
from starlette.responses import JSONResponse

from hangar.core.context import AppContext
from hangar.core.migrating import MigrationSet
from hangar.errors import HangarError
from hangar.identity import IdentityService

log = logging.getLogger(__name__)

READYZ_PATH = "/readyz"
ANSWER_KEPT_S = 2.0  # how long an answer is reused (on the server's clock)


def _heads(sets: Sequence[MigrationSet]) -> dict[str, frozenset[str]]:
    """Each migration set's head revisions, read from its scripts."""
    from alembic.script import ScriptDirectory

    return {m.name: frozenset(ScriptDirectory(str(m.location)).get_heads()) for m in sets}


class Readiness:
    """The migration sets of each kind of database, and the check of every database against them."""

    def __init__(self, sets: Sequence[MigrationSet]) -> None:
        unique = {m.name: m for m in sets}
        self.server_sets = [m for m in unique.values() if m.scope == "server"]
        self.workspace_sets = [m for m in unique.values() if m.scope == "workspace"]
        self._heads: dict[str, frozenset[str]] | None = None  # read once, on the first check
        self._answer: tuple[float, str | None] | None = None  # (when it was checked, what is not ready)
        self._checking: asyncio.Future[str | None] | None = None

    async def answer(self, ctx: AppContext) -> str | None:
        """``problem``, reused for ``ANSWER_KEPT_S``; concurrent callers share the check that is running."""
        now = ctx.clock.monotonic()
        if self._answer is not None and now - self._answer[0] < ANSWER_KEPT_S:
            return self._answer[1]
        if self._checking is None:
            self._checking = asyncio.ensure_future(self._check(ctx, now))
        return await asyncio.shield(self._checking)

    async def _check(self, ctx: AppContext, now: float) -> str | None:
        try:
            why = await self.problem(ctx)
            self._answer = (now, why)
            return why
        finally:
            self._checking = None

    async def heads(self) -> dict[str, frozenset[str]]:
        if self._heads is None:
            self._heads = await asyncio.to_thread(_heads, [*self.server_sets, *self.workspace_sets])
        return self._heads

    async def problem(self, ctx: AppContext) -> str | None:
        """What is not ready, in one sentence for anyone, or ``None``."""
        if (why := await self._behind(ctx.dbs.server, self.server_sets)) is not None:
            log.warning("not ready: the server database %s", why)
            return f"the server database {why}"
        try:
            workspace_ids = await ctx.service(IdentityService).list_workspace_ids()
        except (HangarError, sa.exc.SQLAlchemyError, OSError) as exc:
            log.warning("not ready: the server database cannot list workspaces: %s", exc)
            return "the server database is unreachable"
        for ws in workspace_ids:
            try:
                engine = await ctx.dbs.workspace(ws)
            except HangarError as exc:
                log.warning("not ready: workspace %s: %s", ws, exc.message)
                return "a workspace database is unreachable"
            if (why := await self._behind(engine, self.workspace_sets)) is not None:
                log.warning("not ready: the database of workspace %s %s", ws, why)
                return f"a workspace database {why}"
        return None

    async def _behind(self, engine: AsyncEngine, sets: Sequence[MigrationSet]) -> str | None:
        """Why the database behind ``engine`` is not ready for ``sets``, or ``None``."""
        heads = await self.heads()
        try:
            async with engine.connect() as conn:
                for mset in sets:
                    table = sa.table(f"alembic_version_{mset.name}", sa.column("version_num"))
                    rows = (await conn.execute(sa.select(table.c.version_num))).scalars().all()
                    if set(rows) != heads[mset.name]:
                        return "is not at its migration head"
        except (sa.exc.SQLAlchemyError, OSError) as exc:
            log.warning("readiness check failed: %s", str(exc).splitlines()[0][:300])
            return "is unreachable"
        return None


async def readyz(request: Request) -> JSONResponse:
    ctx: AppContext = request.app.state.ctx
    readiness: Readiness = request.app.state.readiness
    why = await readiness.answer(ctx)
    if why is not None:
        return JSONResponse({"status": why}, status_code=503)
    return JSONResponse({"status": "ready"})
