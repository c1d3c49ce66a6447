"""The login outcome shared by SAML and OIDC: subject pin, email linking, JIT, memberships and roles, refusals."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
import sqlalchemy as sa

from hangar.core import outbox
from hangar.core.clock import FakeClock
from hangar.core.context import AppContext
from hangar.core.datadir import DataDir
from hangar.core.db import Databases
from hangar.core.metrics import Metrics
from hangar.core.principal import Role
from hangar.identity import provisioning
from hangar.identity import tables as identity_tables
from hangar.identity.service import IdentityService
from hangar.sso.config import OidcConnection, SamlConnection
from hangar.sso.errors import SsoError
from hangar.sso.login import SsoIdentity, complete_login

IDP = "https://idp.example.com"


@pytest.fixture
async def ctx(tmp_path: Path) -> AsyncIterator[AppContext]:
    dbs = Databases(DataDir(tmp_path).ensure(), [identity_tables.MIGRATIONS])
    await dbs.open()
    identity = IdentityService(dbs.server, FakeClock())
    await identity.ensure_server_owner()
    fake = SimpleNamespace(service={IdentityService: identity}.__getitem__, metrics=Metrics(enabled=False), dbs=dbs)
    yield cast(AppContext, fake)
    await dbs.aclose()


def who(subject: str = "sub-1", **kw: Any) -> SsoIdentity:
    base: dict[str, Any] = {"issuer": IDP, "subject": subject, "email": "ann@example.com", "display_name": "Ann"}
    return SsoIdentity(**{**base, **kw})


async def login(ctx: AppContext, conn: Any, identity: SsoIdentity, kind: str = "saml") -> Any:
    return await complete_login(ctx, conn, identity, kind=kind, device_name="test")


async def fail(ctx: AppContext, conn: Any, identity: SsoIdentity, kind: str = "saml") -> str:
    with pytest.raises(SsoError) as err:
        await login(ctx, conn, identity, kind)
    assert err.value.sso_code == "invalid"
    return err.value.message


async def test_jit_pins_the_subject_and_later_logins_find_it(ctx: AppContext) -> None:
    first = await login(ctx, SamlConnection(), who())
    assert first.created and not first.linked
    assert (first.user.sso_issuer, first.user.sso_subject, first.user.email) == (IDP, "sub-1", "ann@example.com")
    principal = await ctx.service(IdentityService).authenticate(first.token)
    assert principal.user_id == first.user.id
    # The same subject with a new email and name is the same user, updated.
    again = await login(ctx, SamlConnection(), who(email="ann@new.example", display_name="Ann B"))
    assert again.user.id == first.user.id and not again.created
    assert (again.user.email, again.user.display_name) == ("ann@new.example", "Ann B")
    # Another subject with the first user's email is not them.
    assert "linked to another sign-in" in await fail(ctx, SamlConnection(), who("sub-2", email="ann@new.example"))


async def test_jit_off_refuses_unknown_users_and_provisions_nothing(ctx: AppContext) -> None:
    before = len(await ctx.service(IdentityService).list_users())
    assert "just-in-time" in await fail(ctx, SamlConnection(allowJit=False), who())
    assert len(await ctx.service(IdentityService).list_users()) == before


async def test_email_linking_needs_a_verified_email_for_oidc(ctx: AppContext) -> None:
    invited = await ctx.service(IdentityService).create_user(email="Ann@Example.com", display_name="invited")
    assert "not verified" in await fail(ctx, OidcConnection(), who(), kind="oidc")
    assert "not verified" in await fail(ctx, OidcConnection(), who(email_verified=False), kind="oidc")
    linked = await login(ctx, OidcConnection(allowJit=False), who(email_verified=True), kind="oidc")
    assert linked.linked and linked.user.id == invited.id and linked.user.sso_subject == "sub-1"


async def test_the_server_owner_is_never_taken_over_by_email(ctx: AppContext) -> None:
    owner = await ctx.service(IdentityService).ensure_server_owner()
    await ctx.service(IdentityService).update_user(owner.id, email="root@example.com")
    outcome = await login(ctx, SamlConnection(), who(email="root@example.com"))
    assert outcome.created and outcome.user.id != owner.id


async def test_deactivated_users_are_refused(ctx: AppContext) -> None:
    first = await login(ctx, SamlConnection(), who())
    await ctx.service(IdentityService).deactivate_user(first.user.id)
    assert "deactivated" in await fail(ctx, SamlConnection(), who())
    linked_target = await ctx.service(IdentityService).create_user(email="zed@example.com", display_name="zed")
    await ctx.service(IdentityService).deactivate_user(linked_target.id)
    assert "deactivated" in await fail(ctx, SamlConnection(), who("sub-z", email="zed@example.com"))


async def test_memberships_and_roles(ctx: AppContext) -> None:
    owner = await ctx.service(IdentityService).ensure_server_owner()
    ws1 = (await ctx.service(IdentityService).create_workspace("one", owner.id)).id
    ws2 = (await ctx.service(IdentityService).create_workspace("two", owner.id)).id
    conn = SamlConnection(groupRoleMap={"eng": "member", "ops": "admin"}, defaultRole="guest")
    ann = await login(ctx, conn, who(groups=("eng", "ops")))
    assert ann.role is Role.admin
    assert [await ctx.service(IdentityService).role_of(w, ann.user.id) for w in (ws1, ws2)] == [Role.admin, Role.admin]
    # No mapped group: the default role; autoMember off: no memberships.
    bob = await login(ctx, conn, who("sub-b", email="bob@example.com", groups=("other",)))
    assert await ctx.service(IdentityService).role_of(ws1, bob.user.id) is Role.guest
    cid = await login(ctx, SamlConnection(autoMember=False), who("sub-c", email="cid@example.com"))
    assert await ctx.service(IdentityService).role_of(ws1, cid.user.id) is None
    # A later login whose groups map elsewhere moves existing memberships; one without mapped groups does not.
    await login(ctx, conn, who(groups=("eng",)))
    assert await ctx.service(IdentityService).role_of(ws1, ann.user.id) is Role.member
    await login(ctx, conn, who(groups=()))
    assert await ctx.service(IdentityService).role_of(ws1, ann.user.id) is Role.member
    # Workspaces created later are not joined automatically (autoMember is for the first login).
    ws3 = (await ctx.service(IdentityService).create_workspace("three", owner.id)).id
    await login(ctx, conn, who(groups=("ops",)))
    assert await ctx.service(IdentityService).role_of(ws3, ann.user.id) is None
    # A workspace owner is never demoted by an identity provider, and nobody is made owner.
    await ctx.service(IdentityService).set_role(ws2, ann.user.id, Role.owner)
    await login(ctx, conn, who(groups=("eng",)))
    assert await ctx.service(IdentityService).role_of(ws2, ann.user.id) is Role.owner
    rogue = SamlConnection.model_construct(groupRoleMap={"x": "owner"}, defaultRole="owner", autoMember=True)
    dee = await login(ctx, rogue, who("sub-d", email="dee@example.com", groups=("x",)))
    assert dee.role is Role.admin and await ctx.service(IdentityService).role_of(ws1, dee.user.id) is Role.admin


async def test_an_assertion_without_a_subject_is_refused(ctx: AppContext) -> None:
    assert "did not name" in await fail(ctx, SamlConnection(), who(subject=""))


async def test_concurrent_first_sign_ins_of_one_person_both_succeed(ctx: AppContext) -> None:
    import asyncio

    results = await asyncio.gather(*(login(ctx, SamlConnection(), who("sub-race")) for _ in range(6)))
    assert len({r.user.id for r in results}) == 1
    assert sum(r.created for r in results) == 1


async def test_a_new_person_is_provisioned_whole_or_not_at_all(
    ctx: AppContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The user, their memberships (with the events that announce them) and their credential are one
    transaction: a step that fails leaves no person behind, neither half-provisioned nor without a credential."""
    identity = ctx.service(IdentityService)
    owner = await identity.ensure_server_owner()
    ws = (await identity.create_workspace("one", owner.id)).id
    dbs = cast(Any, ctx).dbs
    users_before = {u.id for u in await identity.list_users()}

    def broken(*args: object) -> object:
        raise RuntimeError("the credential's row cannot be written")

    monkeypatch.setattr(provisioning, "device_insert", broken)
    with pytest.raises(RuntimeError):
        await login(ctx, SamlConnection(), who())
    assert {u.id for u in await identity.list_users()} == users_before
    assert [m.user_id for m in await identity.members(ws)] == [owner.id]
    async with dbs.server.connect() as conn:
        assert (await conn.execute(sa.select(sa.func.count()).select_from(outbox.event_outbox))).scalar() == 0

    monkeypatch.undo()
    outcome = await login(ctx, SamlConnection(), who())
    assert outcome.created and await identity.role_of(ws, outcome.user.id) is Role.member
    assert (await identity.authenticate(outcome.token)).user_id == outcome.user.id
    assert len(await identity.list_devices(outcome.user.id)) == 1


async def test_a_sign_in_waits_for_the_turn_to_write_the_server_database(ctx: AppContext) -> None:
    """Sign-in writers queue on ``Databases.server_writes`` (not in SQLite's busy handler): while another writer
    of this process holds the turn, a new person is not written."""
    import asyncio

    dbs = cast(Any, ctx).dbs
    async with dbs.server_writes:
        pending = asyncio.ensure_future(login(ctx, SamlConnection(), who()))
        await asyncio.sleep(0.2)
        assert not pending.done()
        assert await ctx.service(IdentityService).find_user_by_sso(IDP, "sub-1") is None
    assert (await pending).created
