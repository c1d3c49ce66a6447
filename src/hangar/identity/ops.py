"""Base ops: server info, the caller, workspaces, members, devices."""

from __future__ import annotations

import logging

from pydantic import Field

import hangar
from hangar.core.part import OpFunction
from hangar.core.principal import Role
from hangar.errors import Forbidden, NotFound
from hangar.identity.creation import (
    SETTING_CREATORS,
    Creators,
    check_may_create,
    create_workspace,
    workspace_creators,
)
from hangar.identity.devices import MAX_DEVICE_NAME, device_name
from hangar.identity.events import MemberRemoved, MemberRoleChanged
from hangar.identity.models import Device, Workspace
from hangar.identity.pairing import Pairing
from hangar.identity.results import (
    DeviceRef,
    DeviceView,
    Me,
    MemberRoleSet,
    MemberView,
    OneTimeCode,
    ServerInfo,
    ServerUser,
    UserRef,
    WorkspaceCreators,
    WorkspaceEntry,
    WorkspaceRef,
    WorkspaceRole,
)
from hangar.identity.service import IdentityService
from hangar.rpc.context import OpContext
from hangar.rpc.registry import Args, NoArgs, op

log = logging.getLogger(__name__)

RoleName = str


def _role(ctx: OpContext, name: str, field: str = "role") -> Role:
    return Role.parse(name, field=field)


@op("server.info", kind="read", scope="server")
async def server_info(ctx: OpContext, args: NoArgs) -> ServerInfo:
    """The server's version, canonical origin and whether manual pairing is allowed."""
    s = ctx.app.settings
    return ServerInfo(
        name="Hangar",
        version=hangar.__version__,
        origin=s.origin,
        public_url=s.public_url,
        web_client_url=s.web_client_url,
        pairing_enabled=await ctx.app.service(IdentityService).pairing_enabled(as_of=ctx.principal.authority),
    )


async def _reachable(ctx: OpContext) -> list[tuple[Workspace, Role]]:
    """The caller's workspaces that their credential reaches (one, for a credential limited to a workspace)."""
    rows = await ctx.app.service(IdentityService).workspaces_of(ctx.principal.user_id)
    only = ctx.principal.workspace_id
    return [(w, r) for w, r in rows if only is None or w.id == only]


@op("users.me", kind="read", scope="server")
async def users_me(ctx: OpContext, args: NoArgs) -> Me:
    """The calling user, whether they are the server owner, and their workspaces with roles."""
    user = await ctx.app.service(IdentityService).get_user(ctx.principal.user_id)
    if user is None:
        raise NotFound("your user no longer exists")
    spaces = await _reachable(ctx)
    return Me(
        id=user.id,
        email=user.email,
        display_name=user.display_name,
        is_server_owner=ctx.principal.is_server_owner,
        device_id=ctx.principal.device_id,
        workspaces=[WorkspaceRole(id=w.id, name=w.name, role=r.name) for w, r in spaces],
    )


class CreateWorkspaceArgs(Args):
    name: str = Field(min_length=1, max_length=200)


@op("workspaces.create", kind="mutate", scope="server")
async def workspaces_create(ctx: OpContext, args: CreateWorkspaceArgs) -> WorkspaceRef:
    """Create a workspace; the caller becomes its owner. Who may is a server setting
    (``server.setWorkspaceCreators``; default: the server owner and members of any workspace, not guests)."""
    await check_may_create(ctx.app, ctx.principal.user_id)
    name = args.name.strip() or args.name
    ws = await create_workspace(ctx.app, name, ctx.principal.user_id, by=ctx.principal.label)
    return WorkspaceRef.model_validate(ws)


@op("workspaces.list", kind="read", scope="server")
async def workspaces_list(ctx: OpContext, args: NoArgs) -> list[WorkspaceEntry]:
    """The workspaces the caller belongs to, with the caller's role in each."""
    rows = await _reachable(ctx)
    return [WorkspaceEntry(id=w.id, name=w.name, role=r.name, created_at=w.created_at) for w, r in rows]


@op("members.list", kind="read", scope="workspace")
async def members_list(ctx: OpContext, args: NoArgs) -> list[MemberView]:
    """The workspace's members with their roles."""
    return [
        MemberView(user_id=m.user_id, display_name=m.display_name, email=m.email, role=m.role.name)
        for m in await ctx.app.service(IdentityService).members(ctx.ws)
    ]


class InviteArgs(Args):
    role: RoleName = "member"


@op("members.invite", kind="mutate", scope="workspace", min_role="admin")
async def members_invite(ctx: OpContext, args: InviteArgs) -> OneTimeCode:
    """Mint a single-use invite code (7 days) that joins a new person at ``role``; redeem at POST /auth/pair."""
    role = _role(ctx, args.role)
    assert ctx.role is not None
    if role > ctx.role:
        raise Forbidden(f"an {ctx.role.name} cannot invite at the {role.name} role")
    code = await ctx.app.service(Pairing).mint_invite(ctx.ws, role, ctx.principal.user_id)
    await ctx.audit("members.invite", f"workspace:{ctx.ws}", {"role": role.name})
    return OneTimeCode(code=code)


class SetRoleArgs(Args):
    user_id: str = Field(min_length=1)
    role: RoleName


@op("members.setRole", kind="mutate", scope="workspace", min_role="admin")
async def members_set_role(ctx: OpContext, args: SetRoleArgs) -> MemberRoleSet:
    """Change a member's role. Only owners grant or take away ownership; the last owner stays."""
    role = _role(ctx, args.role)
    current = await ctx.app.service(IdentityService).role_of(ctx.ws, args.user_id)
    if current is None:
        raise NotFound(f"user {args.user_id} is not a member of this workspace")
    assert ctx.role is not None
    if (role is Role.owner or current is Role.owner) and ctx.role is not Role.owner:
        raise Forbidden("only an owner can grant or take away the owner role")
    changed = MemberRoleChanged(workspace_id=ctx.ws, user_id=args.user_id, old_role=current.name, new_role=role.name)
    await ctx.app.service(IdentityService).set_role(ctx.ws, args.user_id, role, announce=changed)
    await ctx.audit("members.setRole", f"user:{args.user_id}", {"from": current.name, "to": role.name})
    return MemberRoleSet(user_id=args.user_id, role=role.name)


class RemoveArgs(Args):
    user_id: str = Field(min_length=1)


@op("members.remove", kind="destructive", scope="workspace", min_role="guest")
async def members_remove(ctx: OpContext, args: RemoveArgs) -> UserRef:
    """Remove a member. Anyone may leave; removing someone else needs admin (and owner to remove an owner)."""
    assert ctx.role is not None
    target = await ctx.app.service(IdentityService).role_of(ctx.ws, args.user_id)
    if target is None:
        raise NotFound(f"user {args.user_id} is not a member of this workspace")
    if args.user_id != ctx.principal.user_id:
        if ctx.role < Role.admin:
            raise Forbidden("removing another member needs the admin role")
        if target is Role.owner and ctx.role is not Role.owner:
            raise Forbidden("only an owner can remove an owner")
    removed = MemberRemoved(workspace_id=ctx.ws, user_id=args.user_id, role=target.name)
    await ctx.app.service(IdentityService).remove_member(ctx.ws, args.user_id, announce=removed)
    await ctx.audit("members.remove", f"user:{args.user_id}", {"role": target.name})
    return UserRef(user_id=args.user_id)


def _device_view(ctx: OpContext, d: Device) -> DeviceView:
    return DeviceView(
        id=d.id,
        name=d.name,
        created_at=d.created_at,
        last_used_at=d.last_used_at,
        revoked_at=d.revoked_at,
        current=d.id == ctx.principal.device_id,
        workspace_id=d.scope.workspace_id,
        read_only=d.scope.read_only,
        expires_at=d.scope.expires_at,
        oauth_client_id=d.scope.client_id,
        space_id=d.scope.space_id,
    )


@op("devices.list", kind="read", scope="server")
async def devices_list(ctx: OpContext, args: NoArgs) -> list[DeviceView]:
    """The caller's device credentials (never the tokens), with last use and revocation."""
    return [_device_view(ctx, d) for d in await ctx.app.service(IdentityService).list_devices(ctx.principal.user_id)]


class RenameArgs(Args):
    device_id: str = Field(min_length=1)
    name: str = Field(description=f"1 to {MAX_DEVICE_NAME} characters, no line breaks")


@op("devices.rename", kind="mutate", scope="server")
async def devices_rename(ctx: OpContext, args: RenameArgs) -> DeviceView:
    """Rename one of the caller's own active device credentials (the server owner's credentials from ``hangar
    admin owner-token`` are the owner's own). A credential issued to an application or an agent renames none,
    itself included: its name is how the person tells it apart when deciding what to revoke."""
    if ctx.principal.delegated:
        raise Forbidden(
            "a credential issued to an application or an agent cannot rename credentials; "
            "its person renames it from their own device"
        )
    name = device_name(args.name)
    old, device = await ctx.app.service(IdentityService).rename_device(ctx.principal.user_id, args.device_id, name)
    # Devices belong to the server, not to a workspace, so the record of the change is the server's log.
    log.info("device %s renamed from %r to %r by %s", device.id, old, name, ctx.principal.label)
    return _device_view(ctx, device)


class RevokeArgs(Args):
    device_id: str = Field(min_length=1)


@op("devices.revoke", kind="destructive", scope="server")
async def devices_revoke(ctx: OpContext, args: RevokeArgs) -> DeviceRef:
    """Revoke one of the caller's device credentials; it stops working at once. A credential issued to an
    application or an agent may revoke only itself (signing out)."""
    if ctx.principal.delegated and args.device_id != ctx.principal.device_id:
        raise Forbidden("a credential issued to an application or an agent may revoke only itself")
    await ctx.app.service(IdentityService).revoke_device(ctx.principal.user_id, args.device_id)
    return DeviceRef(device_id=args.device_id)


class WorkspaceCreatorsArgs(Args):
    who: Creators = Field(description="serverOwner, members (of any workspace; the default) or anyone")


@op("server.workspaceCreators", kind="read", scope="server", server_owner=True)
async def server_workspace_creators(ctx: OpContext, args: NoArgs) -> WorkspaceCreators:
    """Who may create workspaces now (server owner only)."""
    return WorkspaceCreators(who=await workspace_creators(ctx.app))


@op("server.setWorkspaceCreators", kind="mutate", scope="server", server_owner=True)
async def server_set_workspace_creators(ctx: OpContext, args: WorkspaceCreatorsArgs) -> WorkspaceCreators:
    """Choose who may create workspaces (server owner only)."""
    await ctx.app.service(IdentityService).set_setting(SETTING_CREATORS, args.who)
    return WorkspaceCreators(who=args.who)


@op("devices.pairingCode", kind="mutate", scope="server")
async def devices_pairing_code(ctx: OpContext, args: NoArgs) -> OneTimeCode:
    """Mint a single-use 15-minute code that pairs another device to the caller (redeem at POST /auth/pair).
    Only from the person's own device: a credential issued to an application or an agent, or narrowed, would
    otherwise turn itself into a whole, lasting credential of the person."""
    if ctx.principal.delegated or ctx.principal.scoped:
        raise Forbidden("pairing codes are minted from your own device, not by an application or an agent")
    return OneTimeCode(code=await ctx.app.service(Pairing).mint_device_code(ctx.principal.user_id))


@op("server.users", kind="read", scope="server", server_owner=True)
async def server_users(ctx: OpContext, args: NoArgs) -> list[ServerUser]:
    """Every user of the server (server owner only)."""
    return [ServerUser.model_validate(u) for u in await ctx.app.service(IdentityService).list_users()]


class DeactivateArgs(Args):
    user_id: str = Field(min_length=1)


@op("server.deactivateUser", kind="destructive", scope="server", server_owner=True)
async def server_deactivate_user(ctx: OpContext, args: DeactivateArgs) -> UserRef:
    """Deactivate a user and revoke all their credentials (server owner only)."""
    if args.user_id == ctx.principal.user_id:
        raise Forbidden("the server owner cannot deactivate themselves")
    await ctx.app.service(IdentityService).deactivate_user(args.user_id)
    return UserRef(user_id=args.user_id)


IDENTITY_OPS: list[OpFunction] = [
    server_users,
    server_deactivate_user,
    server_workspace_creators,
    server_set_workspace_creators,
    server_info,
    users_me,
    workspaces_create,
    workspaces_list,
    members_list,
    members_invite,
    members_set_role,
    members_remove,
    devices_list,
    devices_revoke,
    devices_rename,
    devices_pairing_code,
]
