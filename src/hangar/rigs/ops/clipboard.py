"""The clipboard consent ops (``rig.clipboardGrant``, ``rig.clipboardRevoke``, ``rig.clipboardGrants``): a person
grants or revokes their own clipboard crossing, and lists their grants (the server owner everyone's). The rule
and the grants' store are ``consent``'s."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

from pydantic import Field, StrictBool, StrictStr, model_validator

from hangar.core.part import OpFunction
from hangar.core.types import Timestamp
from hangar.errors import Forbidden
from hangar.identity import IdentityService
from hangar.rigs.lanes.consent import DEFAULTS, GRANT_MINUTES, Default, Grant, grants_of
from hangar.rigs.model import Direction
from hangar.rpc.context import OpContext
from hangar.rpc.registry import Args, Result, op


class ClipboardGrantRow(Result):
    id: str
    user_id: str
    display_name: str
    direction: Direction
    granted_at: Timestamp
    expires_at: Timestamp | None
    always: bool


class ClipboardPolicy(Result):
    """One person's clipboard crossing: what each direction does by default, and their active grants."""

    defaults: dict[str, Default]
    grants: list[ClipboardGrantRow]


class GrantArgs(Args):
    direction: Direction
    minutes: Annotated[int, Field(ge=1, le=GRANT_MINUTES, strict=True)] | None = None
    always: StrictBool = False

    @model_validator(mode="after")
    def _one_length(self) -> GrantArgs:
        if self.always == (self.minutes is not None):
            raise ValueError(f"give minutes (at most {GRANT_MINUTES}) or always: true, not both")
        return self


class RevokeArgs(Args):
    direction: Direction
    user_id: Annotated[StrictStr, Field(min_length=1, max_length=64)] | None = None


class ListArgs(Args):
    everyone: StrictBool = False


async def _rows(ctx: OpContext, grants: Sequence[Grant]) -> list[ClipboardGrantRow]:
    identity = ctx.app.service(IdentityService)
    names: dict[str, str] = {}
    for g in grants:
        if g.user_id not in names:
            user = await identity.get_user(g.user_id)
            names[g.user_id] = user.display_name if user is not None else g.user_id
    return [
        ClipboardGrantRow(
            id=g.id,
            user_id=g.user_id,
            display_name=names[g.user_id],
            direction=g.direction,
            granted_at=g.granted_at,
            expires_at=g.expires_at,
            always=g.always,
        )
        for g in grants
    ]


async def _policy(ctx: OpContext, user_id: str | None) -> ClipboardPolicy:
    return ClipboardPolicy(defaults=dict(DEFAULTS), grants=await _rows(ctx, await grants_of(ctx).active(user_id)))


@op("rig.clipboardGrant", kind="mutate", scope="server")
async def rig_clipboard_grant(ctx: OpContext, args: GrantArgs) -> ClipboardPolicy:
    """Allow your own clipboard crossing in one direction, for up to ten minutes or always (copying out of a
    rig asks until you do)."""
    await grants_of(ctx).grant(ctx.principal.user_id, args.direction, None if args.always else args.minutes)
    return await _policy(ctx, ctx.principal.user_id)


@op("rig.clipboardRevoke", kind="mutate", scope="server")
async def rig_clipboard_revoke(ctx: OpContext, args: RevokeArgs) -> ClipboardPolicy:
    """Revoke your grants in one direction (the server owner may revoke anyone's, naming ``userId``)."""
    user_id = args.user_id or ctx.principal.user_id
    if user_id != ctx.principal.user_id and not ctx.principal.is_server_owner:
        raise Forbidden("only the server owner revokes another person's clipboard grants")
    await grants_of(ctx).revoke(user_id, args.direction, ctx.principal.user_id)
    return await _policy(ctx, None if user_id != ctx.principal.user_id else user_id)


@op("rig.clipboardGrants", kind="read", scope="server")
async def rig_clipboard_grants(ctx: OpContext, args: ListArgs) -> ClipboardPolicy:
    """Your active clipboard grants; with ``everyone`` (the server owner only) every person's."""
    if args.everyone and not ctx.principal.is_server_owner:
        raise Forbidden("only the server owner lists everyone's clipboard grants")
    return await _policy(ctx, None if args.everyone else ctx.principal.user_id)


OPS: list[OpFunction] = [rig_clipboard_grant, rig_clipboard_revoke, rig_clipboard_grants]
