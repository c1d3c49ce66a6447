"""Voice profiles as they may be used now: a profile is its member's, so a member who left the workspace (or was
removed) takes their voice with them. Membership is read afresh at every use (another process may have removed
them, and no event is waited for): the profiles of people who are no longer members are deleted there and then,
and never handed to a caller."""

from __future__ import annotations

from hangar.core.context import AppContext
from hangar.identity import IdentityService
from hangar.meetings import store
from hangar.meetings.store import VoiceProfile


async def members_profiles(app: AppContext, workspace_id: str, user_id: str | None = None) -> list[VoiceProfile]:
    """The workspace's voice profiles (or one member's) whose members are still members; the others deleted."""
    engine = await app.dbs.workspace(workspace_id)
    found = await store.voice_profiles(engine, user_id)
    identity = app.service(IdentityService)
    gone = {u for u in {p.user_id for p in found} if await identity.role_of(workspace_id, u) is None}
    if gone:
        await store.delete_profiles(engine, [p.id for p in found if p.user_id in gone])
    return [p for p in found if p.user_id not in gone]
