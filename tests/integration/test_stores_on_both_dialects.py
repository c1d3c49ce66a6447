"""The stores that reach their database through ``hangar.core.db`` behave alike on SQLite and on PostgreSQL:
identity (users, workspaces, memberships and the authority counter), a workspace's spaces, messages and tickets
(with the events they record), and agent records (the chief-executive check under the write lock).

PostgreSQL runs use one database with a schema per workspace (``Databases(..., postgresql=URL)``), so the tests
also check that two workspaces never see each other's rows.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hangar.agents.service import Agent, AgentService
from hangar.core.context import AppContext
from hangar.core.principal import Role
from hangar.errors import Conflict, NotFound, Refused
from hangar.identity.authority import AUTHORITY
from hangar.identity.service import IdentityService
from hangar.workspace.authors import Author
from hangar.workspace.spaces import COUNTER as SPACES
from hangar.workspace.spaces import SpaceService
from hangar.workspace.tickets import TicketService
from tests.support.dialects import DIALECTS, app_on, database_url


@pytest.fixture(params=DIALECTS)
async def app(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[AppContext]:
    async with app_on(tmp_path, database_url(str(request.param), request)) as ctx:
        assert ctx.dbs.server.dialect.name == request.param
        yield ctx


async def test_users_and_memberships(app: AppContext) -> None:
    identity = app.service(IdentityService)
    owner = await identity.create_user(email="Ada@Example.com", display_name="Ada")
    other = await identity.create_user(email=None, display_name="Bob", sso_issuer="iss", sso_subject="bob")
    found = await identity.find_user_by_email("ada@example.COM")  # the lower(email) index, on both
    assert found is not None and found.id == owner.id
    assert found.created_at == app.clock.now()  # an aware UTC time read back as written
    with pytest.raises(Conflict):  # the partial unique index on (issuer, subject)
        await identity.create_user(email=None, display_name="Bob 2", sso_issuer="iss", sso_subject="bob")
    await identity.create_user(email=None, display_name="no subject")
    await identity.create_user(email=None, display_name="no subject either")  # NULLs do not collide

    before = await app.dbs.stamp(None, AUTHORITY)
    ws = await identity.create_workspace("Team", owner.id)
    await identity.add_member(ws.id, other.id, Role.member)
    assert await app.dbs.stamp(None, AUTHORITY) > before  # the counter's triggers fire on both
    assert await identity.role_of(ws.id, other.id) is Role.member
    await identity.set_role(ws.id, other.id, Role.admin)
    assert await identity.role_of(ws.id, other.id) is Role.admin
    assert {(m.user_id, m.role) for m in await identity.members(ws.id)} == {
        (owner.id, Role.owner),
        (other.id, Role.admin),
    }
    with pytest.raises(Conflict):  # the last owner stays (checked under the write lock)
        await identity.remove_member(ws.id, owner.id)
    await identity.remove_member(ws.id, other.id)
    assert await identity.role_of(ws.id, other.id) is None
    renamed = await identity.update_user(owner.id, display_name="Ada L.")
    assert renamed.display_name == "Ada L."
    assert (await identity.deactivate_user(other.id)).deactivated_at is not None


# The longest id a workspace may have: on PostgreSQL its schema is named by a digest (names stop at 63 bytes).
OTHER = "w" * 64


async def test_spaces_messages_and_tickets(app: AppContext) -> None:
    await app.dbs.workspace("w1", create=True)
    await app.dbs.workspace(OTHER, create=True)
    spaces, tickets = SpaceService(app), TicketService(app)
    stamps = (await app.dbs.stamp("w1", SPACES), await app.dbs.stamp(OTHER, SPACES))
    space = await spaces.create("w1", title="Plans", created_by="u1")
    # The change counter of w1 moved (its triggers write w1's counters), the other workspace's did not.
    assert await app.dbs.stamp("w1", SPACES) > stamps[0]
    assert await app.dbs.stamp(OTHER, SPACES) == stamps[1]
    author = Author(kind="user", id="u1", name="Ada")
    first = await spaces.post("w1", space.id, author, "hello", metadata={"tags": ["a", "é"], "n": 1})
    second = await spaces.post("w1", space.id, author, "again")
    assert second["seq"] > first["seq"]
    messages = await spaces.messages("w1", space.id)
    assert [m["content"] for m in messages] == ["hello", "again"]
    assert messages[0]["metadata"] == {"tags": ["a", "é"], "n": 1}  # JSON round trip
    assert (await spaces.rename("w1", space.id, "Roadmap")).title == "Roadmap"
    await spaces.archive("w1", space.id)
    with pytest.raises(Refused):
        await spaces.post("w1", space.id, author, "late")
    assert await app.dbs.last_event_seq("w1") >= 3  # SpaceCreated and two MessagePosted, in w1's own log

    parent = await tickets.create("w1", title="Epic", reporter="u1")
    child = await tickets.create("w1", title="Task", reporter="u1", parent_id=parent.id)
    assert [t.id for t in await tickets.all("w1", parent_id=parent.id)] == [child.id]
    assert (await tickets.update("w1", child.id, status="done")).status == "done"
    assert await tickets.delete("w1", parent.id) == 2

    # The other workspace holds none of it.
    assert await spaces.all(OTHER) == []
    assert await tickets.all(OTHER) == []
    assert await app.dbs.last_event_seq(OTHER) == 0
    with pytest.raises(NotFound):
        await spaces.get(OTHER, space.id)


async def test_agent_records(app: AppContext) -> None:
    await app.dbs.workspace("w1", create=True)
    agents = AgentService(app)
    adapter = {"type": "command", "argv": ["true"]}
    # Two named chief at once: the check and the write run under the write lock, so exactly one passes.
    made = await asyncio.gather(
        *(agents.create("w1", name=name, adapter=adapter, role="chiefExecutive") for name in ("Chief", "Rival")),
        return_exceptions=True,
    )
    assert sorted(type(m).__name__ for m in made) == ["Agent", "Conflict"]
    chief = next(m for m in made if isinstance(m, Agent))
    with pytest.raises(Conflict, match=chief.name):
        await agents.create("w1", name="Second", adapter=adapter, role="chiefExecutive")
    helper = await agents.create("w1", name="Helper", adapter=adapter)
    assert {a.name for a in await agents.all("w1")} == {chief.name, "Helper"}
    assert (await agents.get("w1", chief.id)).adapter.argv == ("true",)
    assert (await agents.update("w1", helper.id, name="Aide")).name == "Aide"
    await agents.delete("w1", helper.id)
    with pytest.raises(NotFound):
        await agents.get("w1", helper.id)
