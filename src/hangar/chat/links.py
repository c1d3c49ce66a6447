"""Who a chat member is in Hangar: one-time link codes, the stored links, and the membership check on every use.

A link code is minted for the caller's own identity and redeemed from the chat side (``/<command> link <code>``);
the codes and their rules (lifetime, one use, one per member, the limit on wrong codes) are ``link_codes``. Every
kind of failure gets the one answer ``CODE_REFUSAL`` so a guesser learns nothing from the difference.

A link is identity resolution, not an access grant: ``resolve_member`` re-checks membership each time it is
asked, and a link whose user left the workspace answers a refusal. What the bridge then does for the member is
checked as the ops it amounts to, as them (``LinkedMember.principal``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Literal

import sqlalchemy as sa

from hangar.chat.events import ROSTER_EVENT_TYPES, UserLinked, UserUnlinked
from hangar.chat.link_codes import LinkCodes
from hangar.chat.tables import chat_user_links
from hangar.core.context import AppContext
from hangar.core.event_types import StoredEvent
from hangar.core.events import EventTransaction
from hangar.core.ids import new_id
from hangar.core.principal import Principal, Role
from hangar.errors import Conflict
from hangar.identity import IdentityService, User

CODE_REFUSAL = "That link code is not valid: it may have expired or been used. Mint a new one in Hangar."
NOT_LINKED = "Your chat account is not linked to a member of this Hangar workspace yet."
NOT_MEMBER = "You are no longer a member of this Hangar workspace."

Method = Literal["code", "email"]


@dataclass(frozen=True)
class UserLink:
    id: str
    workspace_id: str
    provider: str
    external_team_id: str
    external_user_id: str
    user_id: str
    method: str
    linked_at: datetime


@dataclass(frozen=True)
class LinkedMember:
    link: UserLink
    user: User
    role: Role

    @property
    def principal(self) -> Principal:
        """The person as the caller of what the bridge does for them: their own user, reaching only the link's
        workspace and never the server owner's server-wide powers; their role is read afresh at each check."""
        user, link = self.user, self.link
        return Principal(user.id, f"chat-link:{link.id}", user.display_name, False, workspace_id=link.workspace_id)


@dataclass(frozen=True)
class LinkRefusal:
    reason: Literal["notLinked", "notMember"]
    message: str


def _link(row: sa.RowMapping) -> UserLink:
    return UserLink(**dict(row))


class UserLinks:
    """The stored links of one server; every change is announced on the bus in the transaction that makes it."""

    def __init__(self, app: AppContext, codes: LinkCodes) -> None:
        self._app = app
        self.codes = codes

    def _identity(self) -> IdentityService:
        return self._app.service(IdentityService)

    async def list(self, workspace_id: str, provider: str | None = None) -> list[UserLink]:
        t = chat_user_links
        q = sa.select(t).where(t.c.workspace_id == workspace_id).order_by(t.c.linked_at, t.c.id)
        if provider is not None:
            q = q.where(t.c.provider == provider)
        engine = await self._app.dbs.workspace(workspace_id)
        async with engine.connect() as conn:
            return [_link(r) for r in (await conn.execute(q)).mappings().all()]

    async def find_by_external(
        self, workspace_id: str, provider: str, team_id: str, external_user_id: str
    ) -> UserLink | None:
        t = chat_user_links
        q = sa.select(t).where(
            t.c.workspace_id == workspace_id,
            t.c.provider == provider,
            t.c.external_team_id == team_id,
            t.c.external_user_id == external_user_id,
        )
        engine = await self._app.dbs.workspace(workspace_id)
        async with engine.connect() as conn:
            row = (await conn.execute(q)).mappings().first()
        return None if row is None else _link(row)

    async def find_by_user(self, workspace_id: str, provider: str, user_id: str) -> UserLink | None:
        t = chat_user_links
        q = sa.select(t).where(t.c.workspace_id == workspace_id, t.c.provider == provider, t.c.user_id == user_id)
        engine = await self._app.dbs.workspace(workspace_id)
        async with engine.connect() as conn:
            row = (await conn.execute(q)).mappings().first()
        return None if row is None else _link(row)

    async def link_by_code(
        self, workspace_id: str, provider: str, team_id: str, external_user_id: str, code: str
    ) -> UserLink | None:
        """Redeem ``code`` for the chat member; ``None`` (answer ``CODE_REFUSAL``) whatever went wrong, including
        a code whose minter has left the workspace since. A chat account that has failed too often is refused
        (``TooManyAttempts``)."""
        user_id = await self.codes.redeem(workspace_id, provider, code, (team_id, external_user_id))
        if user_id is None or await self._active_role(workspace_id, user_id) is None:
            return None
        return await self._store(workspace_id, provider, team_id, external_user_id, user_id, "code")

    async def link_by_email(
        self, workspace_id: str, provider: str, team_id: str, external_user_id: str, verified_email: str
    ) -> UserLink | None:
        """Link the chat member to the workspace member whose user has the provider's verified email. Nothing is
        taken from an existing link: a member already linked to another chat account stays so."""
        user = await self._identity().find_user_by_email(verified_email.strip())
        if user is None or await self._active_role(workspace_id, user.id) is None:
            return None
        if await self.find_by_user(workspace_id, provider, user.id) is not None:
            return None
        if await self.find_by_external(workspace_id, provider, team_id, external_user_id) is not None:
            return None
        return await self._store(workspace_id, provider, team_id, external_user_id, user.id, "email")

    async def unlink(self, workspace_id: str, provider: str, user_id: str) -> UserLink | None:
        """Remove the user's link; the removed link, or ``None`` when there was none."""
        t = chat_user_links
        async with self._app.bus.transaction(workspace_id) as tx:
            row = (
                (
                    await tx.conn.execute(
                        sa.select(t).where(
                            t.c.workspace_id == workspace_id, t.c.provider == provider, t.c.user_id == user_id
                        )
                    )
                )
                .mappings()
                .first()
            )
            if row is None:
                return None
            link = _link(row)
            await self._remove(tx, link)
        return link

    async def resolve_member(
        self, workspace_id: str, provider: str, team_id: str, external_user_id: str
    ) -> LinkedMember | LinkRefusal:
        """The linked member behind a chat member, with membership checked now; a refusal otherwise."""
        link = await self.find_by_external(workspace_id, provider, team_id, external_user_id)
        if link is None:
            return LinkRefusal("notLinked", NOT_LINKED)
        user = await self._identity().get_user(link.user_id)
        role = await self._identity().role_of(workspace_id, link.user_id)
        if user is None or not user.active or role is None:
            return LinkRefusal("notMember", NOT_MEMBER)
        return LinkedMember(link, user, role)

    async def _active_role(self, workspace_id: str, user_id: str) -> Role | None:
        user = await self._identity().get_user(user_id)
        if user is None or not user.active:
            return None
        return await self._identity().role_of(workspace_id, user_id)

    async def _store(
        self, workspace_id: str, provider: str, team_id: str, external_user_id: str, user_id: str, method: Method
    ) -> UserLink:
        """Link, replacing whatever link either side had (one chat account per member and one member per chat
        account): the newest proof of who is who wins."""
        t = chat_user_links
        link = UserLink(
            new_id(), workspace_id, provider, team_id, external_user_id, user_id, method, self._app.clock.now()
        )
        try:
            async with self._app.bus.transaction(workspace_id) as tx:
                rows = (
                    (
                        await tx.conn.execute(
                            sa.select(t).where(
                                t.c.workspace_id == workspace_id,
                                t.c.provider == provider,
                                sa.or_(
                                    t.c.user_id == user_id,
                                    sa.and_(t.c.external_team_id == team_id, t.c.external_user_id == external_user_id),
                                ),
                            )
                        )
                    )
                    .mappings()
                    .all()
                )
                for row in rows:
                    await self._remove(tx, _link(row))
                await tx.conn.execute(sa.insert(t).values(**asdict(link)))
                await tx.publish(
                    UserLinked(
                        workspace_id=workspace_id,
                        provider=provider,
                        user_id=user_id,
                        external_team_id=team_id,
                        external_user_id=external_user_id,
                        method=method,
                    )
                )
        except sa.exc.IntegrityError as exc:  # another process linked one side at the same moment
            raise Conflict("that chat account or member was linked at the same moment; try again") from exc
        return link

    @staticmethod
    async def _remove(tx: EventTransaction, link: UserLink) -> None:
        await tx.conn.execute(sa.delete(chat_user_links).where(chat_user_links.c.id == link.id))
        await tx.publish(
            UserUnlinked(
                workspace_id=link.workspace_id,
                provider=link.provider,
                user_id=link.user_id,
                external_team_id=link.external_team_id,
                external_user_id=link.external_user_id,
            )
        )


class RosterFollower:
    """A subscription to one workspace's link changes: ``changes`` yields once per burst of them. The subscription
    is made at construction, before the watcher's first answer, so no change after that answer is missed."""

    def __init__(self, app: AppContext, workspace_id: str) -> None:
        self._app = app
        self._changed = asyncio.Event()
        self._sub = app.bus.subscribe(
            self._on_event,
            name=f"chat-roster:{workspace_id}:{new_id()[:8]}",
            types=ROSTER_EVENT_TYPES,
            workspace_id=workspace_id,
        )

    async def _on_event(self, _ev: StoredEvent) -> None:
        self._changed.set()

    async def changes(self) -> AsyncIterator[None]:
        while True:
            await self._changed.wait()
            # Changes arriving while the roster is read again are folded into the next push.
            self._changed.clear()
            yield

    async def aclose(self) -> None:
        await self._app.bus.unsubscribe(self._sub)
