"""Pull requests of the workspace's linked repos: a space each, what the forge said of them last, and the
``pullRequest`` trigger's event.

A pull request is synced (``PullRequests.sync``) when a webhook or a poll reports it, or a person opens it by
hand: the forge is asked now (``hangar.forges.github_pulls``) and the row updated in one serialized transaction
with the event it warrants, so two processes syncing at once neither lose an update nor announce one head twice.
The first sync creates the pull request's space (mode ``review``, titled ``<repo>#<number> · <title>``). A pull
request opened, reopened or whose head moved publishes ``PullRequestChanged`` (``forge.pullRequest``: the
``pullRequest`` trigger's event). A forge answering 404 marks a known pull
request ``vanished`` (its last facts kept); a failure of any other kind is recorded on the row (``error``) with
nothing else changed, and raised.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any, ClassVar

import sqlalchemy as sa

from hangar.core.context import AppContext
from hangar.core.events import DomainEvent
from hangar.core.ids import new_id
from hangar.errors import HangarError, NotFound
from hangar.forges import github_pulls
from hangar.forges.github_pulls import PullFacts, PullVanished
from hangar.forges.service import ForgeService
from hangar.forges.tables import forge_pull_requests as t
from hangar.pipelines import PULL_REQUEST_EVENT
from hangar.workspace import Repo, SpaceService, clip_title

SPACE_AUTHOR = "forge"  # who a pull request's space is created by


class PullRequestChanged(DomainEvent):
    """A pull request was opened or reopened, or its head moved: what ``pullRequest`` triggers fire on (their runs
    get these fields under the snake_case state keys, ``hangar.pipelines.PULL_REQUEST_STATE_KEYS``)."""

    type: ClassVar[str] = PULL_REQUEST_EVENT
    repo_id: str
    repo_full_name: str
    pr_number: int
    head_sha: str
    action: str  # opened, reopened, synchronize
    space_id: str


@dataclass(frozen=True)
class PullRow:
    id: str
    repo_id: str
    full_name: str
    number: int
    space_id: str
    title: str
    author: str
    state: str
    head_sha: str
    facts: dict[str, Any]
    opened_at: datetime
    synced_at: datetime
    error: str | None


def _facts(f: PullFacts) -> dict[str, Any]:
    data = asdict(f)
    data.pop("updated_at")
    return data


def _action(before: PullRow | None, facts: PullFacts) -> str | None:
    """What the sync saw happen that fires triggers: a new open pull request, a reopened one, a moved head."""
    if facts.state != "open":
        return None
    if before is None:
        return "opened"
    if before.state != "open":
        return "reopened"
    return "synchronize" if before.head_sha != facts.head_sha else None


class PullRequests:
    def __init__(self, app: AppContext) -> None:
        self._app = app

    async def all(self, workspace_id: str, repo_id: str | None = None) -> list[PullRow]:
        q = sa.select(t).order_by(t.c.full_name, t.c.number.desc())
        if repo_id is not None:
            q = q.where(t.c.repo_id == repo_id)
        engine = await self._app.dbs.workspace(workspace_id)
        async with engine.connect() as conn:
            rows = (await conn.execute(q)).mappings().all()
        return [PullRow(**dict(r)) for r in rows]

    async def find(self, workspace_id: str, repo_id: str, number: int) -> PullRow | None:
        engine = await self._app.dbs.workspace(workspace_id)
        async with engine.connect() as conn:
            row = (
                (await conn.execute(sa.select(t).where(t.c.repo_id == repo_id, t.c.number == number)))
                .mappings()
                .first()
            )
        return PullRow(**dict(row)) if row else None

    async def of_space(self, workspace_id: str, space_id: str) -> PullRow:
        engine = await self._app.dbs.workspace(workspace_id)
        async with engine.connect() as conn:
            row = (await conn.execute(sa.select(t).where(t.c.space_id == space_id))).mappings().first()
        if row is None:
            raise NotFound(f"space {space_id} is no pull request's space")
        return PullRow(**dict(row))

    async def sync(self, workspace_id: str, repo: Repo, number: int) -> tuple[PullRow, str | None]:
        """Ask the forge about pull request ``number`` of ``repo`` now and record it (see the module); answers the
        row and the action it fired (None when nothing fired)."""
        forges = self._app.service(ForgeService)
        ws = await forges.workspace(workspace_id)
        connection = forges.required(ws)
        full_name = await forges.link_of(ws, connection, repo)
        before = await self.find(workspace_id, repo.id, number)
        try:
            facts = await github_pulls.pull_request(connection, full_name, number, await forges.route(connection))
        except PullVanished as exc:
            if before is None:
                missing = f"pull request #{number} of {full_name} does not exist on {connection.host}"
                raise PullVanished(missing) from None
            return await self._failed(workspace_id, before, exc, vanished=True), None
        except HangarError as exc:
            if before is not None:
                await self._failed(workspace_id, before, exc)
            raise
        space_id = before.space_id if before is not None else await self._new_space(workspace_id, repo, facts)
        return await self._record(workspace_id, repo, full_name, facts, space_id)

    async def _new_space(self, workspace_id: str, repo: Repo, facts: PullFacts) -> str:
        title = clip_title(f"{repo.name}#{facts.number} · {facts.title}")
        space = await self._app.service(SpaceService).create(
            workspace_id, title=title, created_by=SPACE_AUTHOR, mode="review"
        )
        return space.id

    async def _record(
        self, workspace_id: str, repo: Repo, full_name: str, facts: PullFacts, space_id: str
    ) -> tuple[PullRow, str | None]:
        now = self._app.clock.now()
        values = {
            "title": facts.title,
            "author": facts.author,
            "state": facts.state,
            "head_sha": facts.head_sha,
            "facts": _facts(facts),
            "synced_at": now,
            "error": None,
        }
        extra_space: str | None = None
        async with self._app.bus.transaction(workspace_id, serialized=True) as tx:
            where = (t.c.repo_id == repo.id) & (t.c.number == facts.number)
            found = (await tx.conn.execute(sa.select(t).where(where))).mappings().first()
            before = PullRow(**dict(found)) if found else None
            if before is None:
                row_id = new_id()
                await tx.conn.execute(
                    sa.insert(t).values(
                        id=row_id,
                        repo_id=repo.id,
                        full_name=full_name,
                        number=facts.number,
                        space_id=space_id,
                        opened_at=now,
                        **values,
                    )
                )
            else:
                row_id = before.id
                if before.space_id != space_id:
                    extra_space = space_id  # another process recorded it first, with its own space
                await tx.conn.execute(sa.update(t).where(t.c.id == row_id).values(full_name=full_name, **values))
            action = _action(before, facts)
            if action is not None:
                await tx.publish(
                    PullRequestChanged(
                        workspace_id=workspace_id,
                        repo_id=repo.id,
                        repo_full_name=full_name,
                        pr_number=facts.number,
                        head_sha=facts.head_sha,
                        action=action,
                        space_id=before.space_id if before else space_id,
                    )
                )
        if extra_space is not None:
            await self._app.service(SpaceService).archive(workspace_id, extra_space)
        row = await self.find(workspace_id, repo.id, facts.number)
        assert row is not None
        return row, action

    async def _failed(self, workspace_id: str, row: PullRow, exc: HangarError, *, vanished: bool = False) -> PullRow:
        values: dict[str, Any] = {"error": exc.message}
        if vanished:
            values |= {"state": "vanished", "synced_at": self._app.clock.now()}
        async with self._app.bus.transaction(workspace_id, serialized=True) as tx:
            await tx.conn.execute(sa.update(t).where(t.c.id == row.id).values(**values))
        found = await self.find(workspace_id, row.repo_id, row.number)
        assert found is not None
        return found
