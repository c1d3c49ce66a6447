"""The outcome of a verified SSO login, shared by SAML and OIDC: who the user is, what they may do, a credential.

Called only after the protocol layer has verified the response, so every refusal here happens before anything
is written ("nothing is provisioned by a failed login"). In order:

1. The provider-subject pin: a user whose ``(sso_issuer, sso_subject)`` is the asserted pair is that user.
2. Otherwise a user with the asserted email and no pin yet (invited, paired or provisioned by SCIM) is linked:
   the pin is written. For OIDC only when the provider says the email is verified. A user pinned to another
   subject is never taken over through a matching email.
3. Otherwise, with ``allowJit``, a new user is created with the pin; without it the login is refused. A new
   user is written in one transaction with their memberships (step 5) and, for a credential hand-off, their
   device credential (step 6): ``IdentityService.provision_user``.
4. A deactivated user is refused.
5. On a user's first SSO login (created or linked) with ``autoMember``, they join every workspace with the role
   from ``groupRoleMap`` (highest match) or ``defaultRole``. On later logins a group that maps to a role moves
   existing memberships to it, except that an owner is never demoted by an identity provider and nobody is
   ever made owner.
6. A device credential is issued with ``identity.issue_device`` (``complete_login``); a sign-in that continues
   a flow of this server stops at the user (``resolve_user``), and that flow issues what it issues.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from hangar.core.context import AppContext
from hangar.core.principal import Role
from hangar.errors import Conflict
from hangar.identity import IdentityService, MemberAdded, MemberRoleChanged, User
from hangar.sso.config import Connection
from hangar.sso.errors import SsoError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SsoIdentity:
    """What a verified response asserts. ``email_verified`` is None when the protocol has no such notion."""

    issuer: str
    subject: str
    email: str | None = None
    display_name: str | None = None
    groups: tuple[str, ...] = field(default_factory=tuple)
    email_verified: bool | None = None


@dataclass(frozen=True)
class LoginOutcome:
    user: User
    token: str
    created: bool
    linked: bool
    role: Role


def _clean_email(email: str | None) -> str | None:
    if not email:
        return None
    email = email.strip()
    return email if "@" in email and len(email) <= 320 else None


async def complete_login(
    ctx: AppContext, conn: Connection, who: SsoIdentity, *, kind: str, device_name: str
) -> LoginOutcome:
    """Resolve, provision and authorise the user behind ``who`` and issue a device credential; raise
    ``SsoError("invalid", ...)``."""
    user, created, linked, role, token = await _resolve(ctx, conn, who, kind=kind, device_name=device_name)
    if token is None:  # not minted with a new user's rows
        async with ctx.dbs.server_writes:
            token = await ctx.service(IdentityService).issue_device(user.id, device_name)
    ctx.metrics.sso_sign_in(kind, "ok")
    log.info("sso login via %s: user %s (created=%s, linked=%s)", kind, user.id, created, linked)
    return LoginOutcome(user, token, created, linked, role)


async def resolve_user(
    ctx: AppContext, conn: Connection, who: SsoIdentity, *, kind: str
) -> tuple[User, bool, bool, Role]:
    """Steps 1 to 5: the user behind ``who`` (created or linked?) and the role the provider's groups give."""
    user, created, linked, role, _ = await _resolve(ctx, conn, who, kind=kind, device_name=None)
    return user, created, linked, role


async def _resolve(
    ctx: AppContext, conn: Connection, who: SsoIdentity, *, kind: str, device_name: str | None
) -> tuple[User, bool, bool, Role, str | None]:
    """``resolve_user``, and with ``device_name`` the token of the credential a new user's rows were written with
    (None when the user was not created here)."""
    if not who.subject or not who.issuer:
        raise SsoError("invalid", "the identity provider did not name the user")
    identity = ctx.service(IdentityService)
    email = _clean_email(who.email)
    name = (who.display_name or "").strip()[:200] or email or who.subject[:200]
    role = conn.role_for_groups(list(who.groups))
    user, candidate = await identity.find_sign_in(who.issuer, who.subject, email)  # one query for both
    created = linked = False
    token: str | None = None
    # Step 2: an account with the asserted email (found only when one was asserted) and no pin yet is linked.
    if user is None and candidate is not None and not await identity.is_server_owner(candidate.id):
        if candidate.sso_subject is not None:
            raise SsoError("invalid", "this email address belongs to an account linked to another sign-in")
        if who.email_verified is False or (kind == "oidc" and who.email_verified is not True):
            raise SsoError("invalid", "the identity provider has not verified this email address")
        _refuse_deactivated(candidate)
        user = await identity.update_user(candidate.id, sso_issuer=who.issuer, sso_subject=who.subject)
        linked = True
    if user is None:
        if not conn.allowJit:
            raise SsoError("invalid", "there is no account for this user and just-in-time provisioning is off")
        try:
            async with ctx.dbs.server_writes:  # this process's turn to write the server database
                user, token = await identity.provision_user(
                    email=email,
                    display_name=name,
                    sso_issuer=who.issuer,
                    sso_subject=who.subject,
                    join_as=_joinable(role) if conn.autoMember else None,
                    device_name=device_name,
                )
            created = True
        except Conflict:
            # Two first logins raced; the other one created the user.
            user = await identity.find_user_by_sso(who.issuer, who.subject)
            if user is None:
                raise SsoError("internal", "the account could not be created") from None
    _refuse_deactivated(user)
    if not created and (name != user.display_name or (email is not None and email != user.email)):
        user = await identity.update_user(user.id, display_name=name, email=email or user.email)
    if not created:  # a new user's memberships were written with them
        mapped = any(g in conn.groupRoleMap for g in who.groups)
        await _apply_memberships(ctx, user, role, first=linked, auto_member=conn.autoMember, mapped=mapped)
    return user, created, linked, role, token


def _refuse_deactivated(user: User) -> None:
    if user.deactivated_at is not None:
        raise SsoError("invalid", "this account is deactivated")


def _joinable(role: Role) -> Role:
    """The role an identity provider may give: nobody is ever made owner by one."""
    return min(role, Role.admin)


async def _apply_memberships(
    ctx: AppContext, user: User, role: Role, *, first: bool, auto_member: bool, mapped: bool
) -> None:
    role = _joinable(role)
    identity = ctx.service(IdentityService)
    for ws_id in await identity.list_workspace_ids():
        current = await identity.role_of(ws_id, user.id)
        if current is None:
            if first and auto_member:
                added = MemberAdded(workspace_id=ws_id, user_id=user.id, role=role.name)
                await identity.add_member(ws_id, user.id, role, announce=added)
        elif mapped and current is not Role.owner and current is not role:
            changed = MemberRoleChanged(workspace_id=ws_id, user_id=user.id, old_role=current.name, new_role=role.name)
            await identity.set_role(ws_id, user.id, role, announce=changed)
