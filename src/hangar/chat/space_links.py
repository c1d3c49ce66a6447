"""Bridges between chat conversations and spaces: a channel thread, or a whole bot DM, to one ``chatprovider`` space.

A link row references its space with ``ON DELETE CASCADE`` (the workspace database enforces foreign keys), so a
deleted space takes its bridge with it. Two mentions of one new thread arriving together are serialized per
workspace in this process; a second process creating the same bridge at the same instant loses on the unique
index and adopts the winner's space (the space it made stays, empty and archived).
"""

from __future__ import annotations

import asyncio
from dataclasses import asdict, dataclass
from datetime import datetime

import sqlalchemy as sa

from hangar.chat.descriptor import descriptor_for
from hangar.chat.tables import chat_space_links
from hangar.core.context import AppContext
from hangar.core.ids import new_id
from hangar.workspace import SPACE_TITLE_MAX, SpaceService, clip_title


@dataclass(frozen=True)
class SpaceLink:
    id: str
    workspace_id: str
    provider: str
    external_team_id: str
    external_channel_id: str
    external_thread_id: str | None  # None: the whole conversation is the anchor (a bot DM)
    cc_space_id: str
    created_by_user_id: str | None
    created_at: datetime
    last_activity_at: datetime


def space_title(provider: str, request: str, *, channel_name: str | None) -> str:
    """``#<channel> · <request>`` for a channel thread, ``<provider> DM · <request>`` for a DM (``channel_name``
    None), within the space title limit."""
    prefix = f"#{channel_name.lstrip('#')}" if channel_name is not None else f"{descriptor_for(provider).label} DM"
    request = " ".join(request.split()) or "conversation"
    return clip_title(f"{prefix} · {request}", SPACE_TITLE_MAX)


def _anchor(thread_id: str | None) -> sa.ColumnElement[bool]:
    t = chat_space_links
    return t.c.external_thread_id.is_(None) if thread_id is None else t.c.external_thread_id == thread_id


class SpaceLinks:
    def __init__(self, app: AppContext, spaces: SpaceService) -> None:
        self._app = app
        self._spaces = spaces
        self._locks: dict[str, asyncio.Lock] = {}

    async def find(self, workspace_id: str, provider: str, channel_id: str, thread_id: str | None) -> SpaceLink | None:
        t = chat_space_links
        q = sa.select(t).where(
            t.c.workspace_id == workspace_id,
            t.c.provider == provider,
            t.c.external_channel_id == channel_id,
            _anchor(thread_id),
        )
        engine = await self._app.dbs.workspace(workspace_id)
        async with engine.connect() as conn:
            row = (await conn.execute(q)).mappings().first()
        return None if row is None else SpaceLink(**dict(row))

    async def for_space(self, workspace_id: str, space_id: str) -> SpaceLink | None:
        """The bridge of a space, if it has one (to mirror what happens in the space out to the chat)."""
        t = chat_space_links
        engine = await self._app.dbs.workspace(workspace_id)
        async with engine.connect() as conn:
            row = (await conn.execute(sa.select(t).where(t.c.cc_space_id == space_id))).mappings().first()
        return None if row is None else SpaceLink(**dict(row))

    async def find_or_create(
        self,
        workspace_id: str,
        provider: str,
        *,
        team_id: str,
        channel_id: str,
        thread_id: str | None,
        request: str,
        channel_name: str | None,
        created_by_user_id: str | None,
        created_by: str,
    ) -> tuple[SpaceLink, bool]:
        """The bridge of the conversation, made with its space when new; ``(link, created)``. ``channel_name``
        None names the space as a DM; ``created_by`` is the space's author label."""
        lock = self._locks.setdefault(workspace_id, asyncio.Lock())
        async with lock:
            found = await self.find(workspace_id, provider, channel_id, thread_id)
            if found is not None:
                return await self.touch(found), False
            space = await self._spaces.create(
                workspace_id,
                title=space_title(provider, request, channel_name=channel_name),
                created_by=created_by,
                kind=descriptor_for(provider).space_kind,
            )
            now = self._app.clock.now()
            link = SpaceLink(
                new_id(), workspace_id, provider, team_id, channel_id, thread_id, space.id, created_by_user_id, now, now
            )
            engine = await self._app.dbs.workspace(workspace_id)
            try:
                async with engine.begin() as conn:
                    await conn.execute(sa.insert(chat_space_links).values(**asdict(link)))
            except sa.exc.IntegrityError:
                winner = await self.find(workspace_id, provider, channel_id, thread_id)
                if winner is None:
                    raise
                await self._spaces.archive(workspace_id, space.id)
                return winner, False
            return link, True

    async def touch(self, link: SpaceLink) -> SpaceLink:
        """Record activity on the bridge now."""
        now = self._app.clock.now()
        engine = await self._app.dbs.workspace(link.workspace_id)
        async with engine.begin() as conn:
            await conn.execute(
                sa.update(chat_space_links).where(chat_space_links.c.id == link.id).values(last_activity_at=now)
            )
        return SpaceLink(**{**asdict(link), "last_activity_at": now})
