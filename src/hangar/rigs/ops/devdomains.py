"""Dev-domain ops: map a name under ``.test`` or ``.localhost`` to a guest port of a rig of the same space, list a
space's mappings, remove one.

Mapping is a member's change with the ``networkEgress`` action class (it opens a path from the space's browser
rigs to a rig's port). The table is the authority (``devdomains``); a change is announced by
``rigs.devDomainChanged`` in the same transaction and applied to this process's live rigs before the answer.
Ports the spec reserves for the rig's own machinery are refused as targets: 7911 (the terminal guest's port
multiplexer), 9222 and 9223 (a browser's automation endpoint: a page must never reach a browser's controls), and
everything below 1024 (where only the host listens: the egress gate and the lanes themselves).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StrictStr

from hangar.core.part import OpFunction
from hangar.core.types import Timestamp
from hangar.errors import InvalidArgs, NotFound, Refused
from hangar.rigs import devdomains, hooks
from hangar.rigs.events import RigDevDomainChanged
from hangar.rigs.manager import RigManager
from hangar.rigs.model import LIVE_PHASES
from hangar.rigs.ops.rig import RigId, manager
from hangar.rpc.context import OpContext
from hangar.rpc.registry import Args, Result, op

RESERVED_PORTS: frozenset[int] = frozenset({7911, 9222, 9223})
FIRST_GUEST_PORT = 1024

SpaceId = Annotated[StrictStr, Field(min_length=1, max_length=64)]
Domain = Annotated[StrictStr, Field(max_length=devdomains.MAX_NAME)]


class DevDomainRow(Result):
    domain: str
    space_id: str
    rig_id: str
    guest_port: int
    created_by: str
    created_at: Timestamp


class DevDomainList(Result):
    space_id: str
    domains: list[DevDomainRow]
    https: bool  # whether dev domains have an HTTPS lane on this host
    https_unavailable_reason: str | None  # why not, when they have none (the CA's files cannot be read)


class SpaceArgs(Args):
    space_id: SpaceId


class SetArgs(SpaceArgs):
    domain: Domain
    rig_id: RigId = Field(alias="rigId")
    guest_port: Annotated[int, Field(ge=1, le=65535, strict=True)] = Field(alias="guestPort")


class RemoveArgs(SpaceArgs):
    domain: Domain


async def _list(ctx: OpContext, mgr: RigManager, space_id: str) -> DevDomainList:
    rows = await devdomains.domains_of(await ctx.db(), space_id)
    reason = mgr.dev.https_reason()
    return DevDomainList(
        space_id=space_id,
        domains=[
            DevDomainRow(
                domain=r.domain,
                space_id=r.space_id,
                rig_id=r.rig_id,
                guest_port=r.guest_port,
                created_by=r.created_by,
                created_at=r.created_at,
            )
            for r in rows
        ],
        https=reason is None,
        https_unavailable_reason=reason,
    )


@op("rig.devDomains", kind="read", scope="workspace", min_role="member")
async def rig_dev_domains(ctx: OpContext, args: SpaceArgs) -> DevDomainList:
    """A space's dev domains (name -> rig and guest port) and whether this host has an HTTPS lane for them."""
    mgr = manager(ctx)
    await hooks.check_space(ctx.app, ctx.ws, args.space_id, archived_ok=True)
    return await _list(ctx, mgr, args.space_id)


def _check_port(port: int) -> None:
    if port < FIRST_GUEST_PORT:
        raise InvalidArgs(
            f"guestPort must be {FIRST_GUEST_PORT} or above: lower ports in a rig are the host's (its egress gate "
            "and dev-domain lanes), and a program in the rig cannot listen there",
            field="guestPort",
        )
    if port in RESERVED_PORTS:
        raise InvalidArgs(
            f"guestPort {port} is reserved for the rig's own machinery (7911 port multiplexer, 9222/9223 browser "
            "automation) and is never a dev domain's target",
            field="guestPort",
        )


@op("rig.setDevDomain", kind="mutate", scope="workspace", min_role="member", actions=("networkEgress",))
async def rig_set_dev_domain(ctx: OpContext, args: SetArgs) -> DevDomainList:
    """Map a dev domain (name.test or name.localhost) to a guest port of a rig of the same space; the space's
    browser rigs reach it over HTTP and HTTPS. Re-pointing a domain of the space is
    allowed; a domain another space holds is a conflict."""
    domain = devdomains.validate_domain(args.domain)
    _check_port(args.guest_port)
    mgr = manager(ctx)
    await hooks.check_space(ctx.app, ctx.ws, args.space_id)
    rec = await mgr.store.get(ctx.ws, args.rig_id)
    if rec is None:
        raise NotFound(f"no rig {args.rig_id} in this workspace")
    if rec.space_id != args.space_id:
        raise Refused(f"rig {args.rig_id} belongs to another space: a dev domain maps to a rig of its own space")
    if rec.phase not in LIVE_PHASES:
        raise Refused(f"rig {args.rig_id} is {rec.phase.value}; map the domain to a running rig")
    entry = devdomains.DevDomain(
        domain, args.space_id, args.rig_id, args.guest_port, ctx.principal.label, ctx.app.clock.now()
    )
    async with ctx.app.bus.transaction(ctx.ws) as tx:
        await devdomains.put(tx.conn, entry)
        await tx.publish(
            RigDevDomainChanged(
                workspace_id=ctx.ws,
                space_id=args.space_id,
                domain=domain,
                change="set",
                rig_id=args.rig_id,
                guest_port=args.guest_port,
            )
        )
    await mgr.dev.refresh(ctx.ws, args.space_id)
    details = {"domain": domain, "guestPort": args.guest_port}
    await mgr.log_action(ctx.ws, args.rig_id, ctx.principal, "setDevDomain", details)
    await ctx.audit("rig.setDevDomain", f"space:{args.space_id}", {**details, "rigId": args.rig_id})
    return await _list(ctx, mgr, args.space_id)


@op("rig.removeDevDomain", kind="mutate", scope="workspace", min_role="member")
async def rig_remove_dev_domain(ctx: OpContext, args: RemoveArgs) -> DevDomainList:
    """Remove a dev domain of the space: its name stops resolving and routing in the space's rigs."""
    domain = devdomains.validate_domain(args.domain)
    mgr = manager(ctx)
    await hooks.check_space(ctx.app, ctx.ws, args.space_id, archived_ok=True)
    async with ctx.app.bus.transaction(ctx.ws) as tx:
        if not await devdomains.delete(tx.conn, args.space_id, domain):
            raise NotFound(f"no dev domain {domain} in this space")
        await tx.publish(
            RigDevDomainChanged(workspace_id=ctx.ws, space_id=args.space_id, domain=domain, change="removed")
        )
    await mgr.dev.refresh(ctx.ws, args.space_id)
    await ctx.audit("rig.removeDevDomain", f"space:{args.space_id}", {"domain": domain})
    return await _list(ctx, mgr, args.space_id)


OPS: list[OpFunction] = [rig_dev_domains, rig_set_dev_domain, rig_remove_dev_domain]
