"""Ops on tickets (``tickets.*``): file, list, read, edit and delete them."""

from __future__ import annotations

from hangar.core.part import OpFunction
from hangar.rpc.context import OpContext
from hangar.rpc.registry import Args, op
from hangar.workspace.results import (
    TicketDetail,
    TicketList,
    TicketsDeleted,
    TicketView,
)
from hangar.workspace.tickets import TicketService


class TicketCreateArgs(Args):
    title: str
    description: str = ""
    parent_id: str | None = None
    status: str = "open"
    space_id: str | None = None


@op("tickets.create", kind="mutate", scope="workspace")
async def tickets_create(ctx: OpContext, args: TicketCreateArgs) -> TicketView:
    """File a ticket (a sub-ticket with ``parentId``), reported by the caller."""
    ticket = await ctx.app.service(TicketService).create(
        ctx.ws,
        title=args.title,
        description=args.description,
        reporter=ctx.principal.label,
        parent_id=args.parent_id,
        status=args.status,
        space_id=args.space_id,
    )
    await ctx.audit("tickets.create", f"ticket:{ticket.id}", {"title": ticket.title})
    return TicketView.model_validate(ticket)


class TicketListArgs(Args):
    parent_id: str | None = None
    roots_only: bool = False
    status: str | None = None


@op("tickets.list", kind="read", scope="workspace")
async def tickets_list(ctx: OpContext, args: TicketListArgs) -> TicketList:
    """List tickets, optionally the sub-tickets of one parent, only top-level ones, or one status."""
    tickets = await ctx.app.service(TicketService).all(
        ctx.ws, parent_id=args.parent_id, roots_only=args.roots_only, status=args.status
    )
    return TicketList(tickets=[TicketView.model_validate(t) for t in tickets])


class TicketRef(Args):
    ticket_id: str


@op("tickets.get", kind="read", scope="workspace")
async def tickets_get(ctx: OpContext, args: TicketRef) -> TicketDetail:
    """One ticket with its direct sub-tickets."""
    svc = ctx.app.service(TicketService)
    ticket = await svc.get(ctx.ws, args.ticket_id)
    subs = [TicketView.model_validate(s) for s in await svc.all(ctx.ws, parent_id=ticket.id)]
    return TicketDetail.model_validate({**vars(ticket), "sub_tickets": subs})


class TicketUpdateArgs(Args):
    ticket_id: str
    title: str | None = None
    description: str | None = None
    status: str | None = None
    parent_id: str | None = None
    detach: bool = False


@op("tickets.update", kind="mutate", scope="workspace")
async def tickets_update(ctx: OpContext, args: TicketUpdateArgs) -> TicketView:
    """Edit a ticket: title, description, status, or its parent (``detach`` makes it top-level)."""
    ticket = await ctx.app.service(TicketService).update(
        ctx.ws,
        args.ticket_id,
        title=args.title,
        description=args.description,
        status=args.status,
        parent_id=args.parent_id,
        detach=args.detach,
    )
    await ctx.audit("tickets.update", f"ticket:{ticket.id}", {"status": ticket.status})
    return TicketView.model_validate(ticket)


@op("tickets.delete", kind="destructive", scope="workspace")
async def tickets_delete(ctx: OpContext, args: TicketRef) -> TicketsDeleted:
    """Delete a ticket and its sub-tickets."""
    count = await ctx.app.service(TicketService).delete(ctx.ws, args.ticket_id)
    await ctx.audit("tickets.delete", f"ticket:{args.ticket_id}", {"deleted": count})
    return TicketsDeleted(deleted=count)


OPS: list[OpFunction] = [tickets_create, tickets_list, tickets_get, tickets_update, tickets_delete]
