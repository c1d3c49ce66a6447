"""A member's voice leaves with them: when a member is removed, their voice profiles in that workspace are
deleted at once (not when the profiles are next listed), so a re-added member starts without one. The uses of
profiles (``profiles.members_profiles``) still check membership afresh, for a removal whose event this process
has not yet seen."""

from __future__ import annotations

import logging

from hangar.core.context import AppContext
from hangar.core.event_types import StoredEvent
from hangar.core.events import Subscription
from hangar.identity import IdentityService, MemberRemoved
from hangar.meetings import store

log = logging.getLogger("hangar.meetings")

_subscriptions: dict[int, Subscription] = {}


async def _on_member_removed(app: AppContext, ev: StoredEvent) -> None:
    user_id = ev.payload.get("userId")
    if not isinstance(user_id, str):
        return
    # Re-added since (the event is read after the fact): their profiles of now are theirs to keep.
    if await app.service(IdentityService).role_of(ev.workspace_id, user_id) is not None:
        return
    engine = await app.dbs.workspace(ev.workspace_id)
    gone = await store.delete_profiles(engine, [p.id for p in await store.voice_profiles(engine, user_id)])
    if gone:
        log.info("deleted %d voice profile(s) of a removed member", gone)


async def start(app: AppContext) -> None:
    async def handler(ev: StoredEvent) -> None:
        await _on_member_removed(app, ev)

    _subscriptions[id(app)] = app.bus.subscribe(handler, name="meetings:profiles", types=(MemberRemoved.type,))


async def stop(app: AppContext) -> None:
    sub = _subscriptions.pop(id(app), None)
    if sub is not None:
        await app.bus.unsubscribe(sub)
