"""Domain events on the wire: every declared event's payload is camelCase and validates against its model when it
is published; events stored before payloads went camelCase (snake_case rows) still load, in wire form."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hangar.config import Settings
from hangar.core.context import AppContext
from hangar.core.event_types import DomainEvent
from hangar.core.events import _insert_event
from hangar.identity import IdentityService
from hangar.identity.creation import create_workspace
from hangar.identity.events import MemberAdded, MemberRoleChanged
from hangar.identity.part import IDENTITY_PART
from hangar.rpc.frames import payload_schema
from hangar.server.context_factory import open_context
from hangar.server.parts import all_parts


def _declared() -> list[type[DomainEvent]]:
    return [cls for part in all_parts() for cls in part.events]


@pytest.mark.parametrize("cls", _declared(), ids=lambda cls: cls.type)
def test_every_declared_payload_is_camel_case_on_the_wire(cls: type[DomainEvent]) -> None:
    schema = payload_schema(cls)
    names = list(schema.get("properties", {}))
    assert all("_" not in n for n in names), names
    assert "workspaceId" not in names  # the workspace holds the event; it is not in the payload
    # Every field is always sent (defaults too), so a client may rely on each.
    assert set(schema.get("required", [])) == set(names)


@pytest.fixture
async def ctx(tmp_path: Path) -> AsyncIterator[AppContext]:
    async with open_context(Settings(data_dir=tmp_path), parts=[IDENTITY_PART]) as app:
        yield app


async def _workspace(ctx: AppContext) -> str:
    owner = await ctx.service(IdentityService).ensure_server_owner()
    return (await create_workspace(ctx, "W", owner.id, by="test")).id


async def test_a_published_event_goes_out_and_is_stored_camel_case(ctx: AppContext) -> None:
    ws = await _workspace(ctx)
    stored = await ctx.bus.publish(
        MemberRoleChanged(workspace_id=ws, user_id="u1", old_role="member", new_role="admin")
    )
    assert stored.payload == {"userId": "u1", "oldRole": "member", "newRole": "admin"}
    engine = await ctx.dbs.workspace(ws)
    async with engine.connect() as conn:
        raw = (await conn.exec_driver_sql("SELECT payload FROM domain_events WHERE seq = ?", (stored.seq,))).scalar()
    assert '"oldRole"' in str(raw) and "old_role" not in str(raw)


@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings")
async def test_a_payload_that_does_not_validate_against_its_model_is_not_published(ctx: AppContext) -> None:
    ws = await _workspace(ctx)
    before = len(await ctx.bus.replay(ws))
    # A model built without validation (the way a part could slip a wrong value past its own model).
    forged = MemberAdded.model_construct(workspace_id=ws, user_id=42, role=None)
    with pytest.raises(ValueError, match=r"identity.memberAdded does not match MemberAdded"):
        await ctx.bus.publish(forged)
    # A declared type published by wire name is held to its model too: a missing field, a snake_case one.
    with pytest.raises(ValueError, match=r"identity.memberAdded does not match MemberAdded"):
        await ctx.bus.publish_raw(ws, MemberAdded.type, {"userId": "u1"})
    with pytest.raises(ValueError, match=r"identity.memberAdded does not match MemberAdded"):
        await ctx.bus.publish_raw(ws, MemberAdded.type, {"userId": "u1", "role": "member", "extra_field": 1})
    # The refusal names the field and why, never the value given (a payload may carry a secret).
    with pytest.raises(ValueError) as refused:
        await ctx.bus.publish_raw(ws, MemberAdded.type, {"userId": {"token": "sk-live-0123456789"}, "role": "x"})
    assert "userId" in str(refused.value) and "sk-live-0123456789" not in str(refused.value)
    assert len(await ctx.bus.replay(ws)) == before
    # At the line: a payload with exactly the model's fields is recorded, in wire form.
    stored = await ctx.bus.publish_raw(ws, MemberAdded.type, {"userId": "u1", "role": "member"})
    assert stored.payload == {"userId": "u1", "role": "member"}


async def test_an_event_stored_in_snake_case_still_loads_in_wire_form(ctx: AppContext) -> None:
    ws = await _workspace(ctx)
    writer = await ctx.dbs.writer(ws)
    # Written the old way: the payload's fields as Python names them.
    old = {"user_id": "u1", "old_role": "member", "new_role": "admin"}
    seq = await writer.call(_insert_event, "old-1", MemberRoleChanged.type, ctx.clock.now(), old)
    # An emitted event (no part declares its type) keeps the payload it was given, whatever its spelling.
    await writer.call(_insert_event, "old-2", "review.approved", ctx.clock.now(), {"by_whom": "meg"})
    got = {e.id: e for e in await ctx.bus.replay(ws, after_seq=seq - 1)}
    assert got["old-1"].payload == {"userId": "u1", "oldRole": "member", "newRole": "admin"}
    assert got["old-2"].payload == {"by_whom": "meg"}
    event = got["old-1"].parse(ctx.bus.registry)
    assert event == MemberRoleChanged(workspace_id=ws, user_id="u1", old_role="member", new_role="admin")
    # The outbox relays a row it may have written the old way: recorded in wire form.
    relayed = await ctx.bus.publish_once(ws, "old-3", MemberRoleChanged.type, ctx.clock.now(), old)
    assert relayed is not None and relayed.payload == got["old-1"].payload
