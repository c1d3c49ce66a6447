"""Spaces (workspace conversations) and their messages.

A space has a kind (``standard`` human-facing spaces; ``chatprovider`` for spaces bridged to a chat provider,
which behave the same), a mode (``chat``, ``review``, ``plan``), a title, a hidden flag (spaces pipelines open for
their own work), a provisioning state, and a working folder ``<dataDir>/<workspaceId>/spaces/<spaceId>/`` where
its repo worktrees are checked out and command-line agents run.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, TypedDict, Unpack

import sqlalchemy as sa

from hangar.core.context import AppContext
from hangar.core.event_types import DomainEvent
from hangar.core.events import EventTransaction
from hangar.core.ids import new_id
from hangar.core.paths import contained
from hangar.core.stamps import WorkspaceCaches
from hangar.core.wire import require_text
from hangar.errors import InvalidArgs, NotFound, Refused
from hangar.workspace import tables
from hangar.workspace.authors import Author
from hangar.workspace.events import MessagePosted, SpaceCreated, SpaceProvisioningChanged, SpaceUpdated
from hangar.workspace.folders import make_folder
from hangar.workspace.results import MessageAuthor, MessageView
from hangar.workspace.writes import WorkspaceWrites

MODES: tuple[str, ...] = ("chat", "review", "plan")
KINDS: tuple[str, ...] = ("standard", "chatprovider")
PROVISIONING_STATES: tuple[str, ...] = ("provisioning", "ready", "failed", "cancelled")
MESSAGE_MAX = 200_000
COUNTER = "spaces"  # the change counter of the spaces table (migration w0002)
SPACE_TITLE_MAX = 48
# The state key ``messaging.createSpace`` publishes its space under, where later agent steps look for it.
SPACE_STATE_KEY = "pipeline_space_id"


def clip_title(text: str, limit: int = SPACE_TITLE_MAX) -> str:
    """A title cut to ``limit`` characters with an ellipsis, for titles made from free text (prompts, requests)."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


@dataclass(frozen=True)
class Space:
    id: str
    kind: str
    mode: str
    title: str
    hidden: bool
    created_by: str
    provisioning: str
    provisioning_step: str | None
    provisioning_error: str | None
    created_at: datetime
    updated_at: datetime
    archived_at: datetime | None

    @property
    def is_external_chat(self) -> bool:
        """The one check every behaviour that differs for bridged spaces goes through."""
        return self.kind == "chatprovider"


def check_mode(mode: str, field: str = "mode") -> str:
    if mode not in MODES:
        raise InvalidArgs(f"{field} must be one of {', '.join(MODES)}, not {mode!r}", field=field)
    return mode


def message_to_wire(row: Any) -> dict[str, Any]:
    """A message row in its wire form (``MessageView``), as replies and ``MessagePosted`` carry it."""
    author = MessageAuthor(kind=row["author_kind"], id=row["author_id"], name=row["author_name"])
    view = MessageView(
        id=row["id"],
        seq=row["seq"],
        space_id=row["space_id"],
        author=author,
        content=row["content"],
        metadata=dict(row["metadata"] or {}),
        run_id=row["run_id"],
        created_at=row["created_at"],
    )
    return view.model_dump(mode="json", by_alias=True)


def _updated(workspace_id: str, space: Space) -> DomainEvent:
    return SpaceUpdated(
        workspace_id=workspace_id, space_id=space.id, title=space.title, archived=space.archived_at is not None
    )


class MessageOptions(TypedDict, total=False):
    """What ``post`` passes on to ``append`` unchanged (the defaults are ``append``'s)."""

    metadata: dict[str, Any] | None
    run_id: str | None
    space: Space | None


class SpaceService:
    def __init__(self, app: AppContext, writes: WorkspaceWrites | None = None) -> None:
        self._app = app
        self.writes = writes or WorkspaceWrites()
        # Dispatches read spaces often: kept while the workspace's ``spaces`` change counter stays put, so a
        # space changed by another process is read fresh.
        self._cache: WorkspaceCaches[str, Space] = WorkspaceCaches(app.dbs.stamp, COUNTER)

    def folder(self, workspace_id: str, space_id: str) -> Path:
        """The space's working folder (not created here). Callers look the space up first; the id is also
        checked to name one folder under the workspace's ``spaces`` directory."""
        return contained(self._app.datadir.workspace_dir(workspace_id) / "spaces", space_id, field="space_id")

    async def create(
        self,
        workspace_id: str,
        *,
        title: str,
        created_by: str,
        mode: str = "chat",
        kind: str = "standard",
        hidden: bool = False,
        provisioning: str = "ready",
    ) -> Space:
        title = require_text(title, "title", limit=SPACE_TITLE_MAX)
        check_mode(mode)
        if kind not in KINDS:
            raise InvalidArgs(f"kind must be one of {', '.join(KINDS)}, not {kind!r}", field="kind")
        now = self._app.clock.now()
        space_id = new_id()
        await make_folder(self._app, workspace_id, self.folder(workspace_id, space_id))
        async with self._app.bus.transaction(workspace_id) as tx:
            await tx.conn.execute(
                sa.insert(tables.spaces).values(
                    id=space_id,
                    kind=kind,
                    mode=mode,
                    title=title,
                    hidden=hidden,
                    created_by=created_by,
                    provisioning=provisioning,
                    created_at=now,
                    updated_at=now,
                )
            )
            await tx.publish(
                SpaceCreated(
                    workspace_id=workspace_id, space_id=space_id, title=title, mode=mode, kind=kind, hidden=hidden
                )
            )
        return await self.get(workspace_id, space_id)

    async def get(self, workspace_id: str, space_id: str) -> Space:
        async def load() -> Space:
            engine = await self._app.dbs.workspace(workspace_id)
            async with engine.connect() as conn:
                row = (
                    (await conn.execute(sa.select(tables.spaces).where(tables.spaces.c.id == space_id)))
                    .mappings()
                    .first()
                )
            if row is None:
                raise NotFound(f"space {space_id} does not exist in this workspace")
            return Space(**dict(row))

        return await self._cache.get(workspace_id, space_id, load)

    async def find_created_by(self, workspace_id: str, created_by: str) -> Space | None:
        t = tables.spaces
        engine = await self._app.dbs.workspace(workspace_id)
        async with engine.connect() as conn:
            row = (await conn.execute(sa.select(t).where(t.c.created_by == created_by))).mappings().first()
        return Space(**dict(row)) if row else None

    async def find_posted(
        self, workspace_id: str, space_id: str, author_id: str, step_key: str
    ) -> dict[str, Any] | None:
        """The message ``author_id`` posted in the space with ``metadata.pipelineStep == step_key``, if any."""
        t = tables.messages
        q = sa.select(t).where(t.c.space_id == space_id, t.c.author_id == author_id).order_by(t.c.seq)
        engine = await self._app.dbs.workspace(workspace_id)
        async with engine.connect() as conn:
            rows = (await conn.execute(q)).mappings().all()
        found = [r for r in rows if (r["metadata"] or {}).get("pipelineStep") == step_key]
        return message_to_wire(found[0]) if found else None

    async def all(
        self, workspace_id: str, *, include_archived: bool = False, include_hidden: bool = False
    ) -> list[Space]:
        t = tables.spaces
        q = sa.select(t).order_by(t.c.created_at, t.c.id)
        if not include_archived:
            q = q.where(t.c.archived_at.is_(None))
        if not include_hidden:
            q = q.where(t.c.hidden.is_(False))
        engine = await self._app.dbs.workspace(workspace_id)
        async with engine.connect() as conn:
            rows = (await conn.execute(q)).mappings().all()
        return [Space(**dict(r)) for r in rows]

    async def _update(
        self, workspace_id: str, space_id: str, announce: Callable[[Space], DomainEvent], **values: Any
    ) -> Space:
        """Change the space's row and publish what ``announce`` makes of the changed space, in one transaction."""
        await self.get(workspace_id, space_id)
        t = tables.spaces
        async with self._app.bus.transaction(workspace_id) as tx:
            await tx.conn.execute(
                sa.update(t).where(t.c.id == space_id).values(updated_at=self._app.clock.now(), **values)
            )
            row = (await tx.conn.execute(sa.select(t).where(t.c.id == space_id))).mappings().one()
            space = Space(**dict(row))
            await tx.publish(announce(space))
        return space

    async def rename(self, workspace_id: str, space_id: str, title: str) -> Space:
        title = require_text(title, "title", limit=SPACE_TITLE_MAX)
        return await self._update(workspace_id, space_id, functools.partial(_updated, workspace_id), title=title)

    async def archive(self, workspace_id: str, space_id: str) -> Space:
        current = await self.get(workspace_id, space_id)
        if current.archived_at is not None:
            return current
        now = self._app.clock.now()
        return await self._update(workspace_id, space_id, functools.partial(_updated, workspace_id), archived_at=now)

    async def set_provisioning(
        self,
        workspace_id: str,
        space_id: str,
        state: str,
        *,
        step: str | None = None,
        detail: str | None = None,
        error: str | None = None,
    ) -> None:
        """Record setup progress on the space row and publish ``SpaceProvisioningChanged``."""
        if state not in PROVISIONING_STATES:
            raise ValueError(f"unknown provisioning state {state!r}")

        def changed(space: Space) -> DomainEvent:
            return SpaceProvisioningChanged(
                workspace_id=workspace_id, space_id=space_id, state=state, step=step, detail=detail
            )

        await self._update(
            workspace_id, space_id, changed, provisioning=state, provisioning_step=step, provisioning_error=error
        )

    async def post(
        self, workspace_id: str, space_id: str, author: Author, content: str, **options: Unpack[MessageOptions]
    ) -> dict[str, Any]:
        """Append a message and publish ``MessagePosted`` in one transaction; an archived space takes no new
        messages. ``space`` is the space as the caller just read it (saves reading it again)."""
        async with self.writes.lock(workspace_id), self._app.bus.transaction(workspace_id) as tx:
            return await self.append(tx, space_id, author, content, **options)

    async def append(
        self,
        tx: EventTransaction,
        space_id: str,
        author: Author,
        content: str,
        *,
        metadata: dict[str, Any] | None = None,
        run_id: str | None = None,
        space: Space | None = None,
    ) -> dict[str, Any]:
        """Within the caller's transaction (``bus.transaction``, under ``writes.lock``): append a message and
        its ``MessagePosted`` event (a dispatch records its runs, its prompt and their events at once)."""
        workspace_id = tx.workspace_id
        if len(content) > MESSAGE_MAX:
            raise InvalidArgs(f"content is {len(content)} characters; the limit is {MESSAGE_MAX}", field="content")
        if space is None or space.id != space_id:
            space = await self.get(workspace_id, space_id)
        if space.archived_at is not None:
            raise Refused(f"space {space_id} is archived and takes no new messages")
        values = {
            "id": new_id(),
            "space_id": space_id,
            "author_kind": author.kind,
            "author_id": author.id,
            "author_name": author.name,
            "content": content,
            "metadata": metadata or {},
            "run_id": run_id,
            "created_at": self._app.clock.now(),
        }
        result = await tx.conn.execute(sa.insert(tables.messages).values(**values))
        message = message_to_wire({**values, "seq": int(result.inserted_primary_key[0])})  # type: ignore[index]
        await tx.publish(MessagePosted(workspace_id=workspace_id, space_id=space_id, message=message))
        return message

    async def messages(
        self, workspace_id: str, space_id: str, *, after_seq: int = 0, limit: int = 200
    ) -> list[dict[str, Any]]:
        """Messages after ``after_seq``, oldest first."""
        await self.get(workspace_id, space_id)
        t = tables.messages
        q = sa.select(t).where(t.c.space_id == space_id, t.c.seq > after_seq).order_by(t.c.seq).limit(limit)
        engine = await self._app.dbs.workspace(workspace_id)
        async with engine.connect() as conn:
            rows = (await conn.execute(q)).mappings().all()
        return [message_to_wire(r) for r in rows]

    async def recent(
        self, workspace_id: str, space_id: str, *, limit: int, before_seq: int | None = None
    ) -> list[dict[str, Any]]:
        """The last ``limit`` messages (before ``before_seq`` when given), oldest first (what an agent sees of the
        conversation; a reader paging back through its history)."""
        t = tables.messages
        q = sa.select(t).where(t.c.space_id == space_id)
        if before_seq is not None:
            q = q.where(t.c.seq < before_seq)
        q = q.order_by(t.c.seq.desc()).limit(limit)
        engine = await self._app.dbs.workspace(workspace_id)
        async with engine.connect() as conn:
            rows = (await conn.execute(q)).mappings().all()
        return [message_to_wire(r) for r in reversed(rows)]
