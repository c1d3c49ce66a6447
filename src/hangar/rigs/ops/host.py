"""The host's rig ops, for the server owner (``rigs.*``): the backend and memory budget (``rigs.status``,
``rigs.setMemoryBudget``) and the image packs rigs boot from (``rigs.packs``, ``rigs.watchPacks``,
``rigs.buildPack``; kept current against their archives: ``rigs.checkPacks``, ``rigs.setPackRefresh``)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Annotated

from pydantic import Field, StrictStr

from hangar.config import MAX_PACK_REFRESH_HOURS
from hangar.core.part import OpFunction
from hangar.errors import Unavailable
from hangar.identity import IdentityService
from hangar.rigs.images.refresh import Record
from hangar.rigs.lifecycle.budget import MEMORY_BUDGET_SETTING
from hangar.rigs.lifecycle.manager import RigManager
from hangar.rigs.lifecycle.packrefresh import REFRESH_SETTING, PackRefresh
from hangar.rigs.ops.rig import manager
from hangar.rigs.results import EnclosureView, HostStatus, PackList, PackRefreshView, PackView
from hangar.rpc.context import OpContext
from hangar.rpc.registry import Args, NoArgs, op

log = logging.getLogger(__name__)


def _host_status(mgr: RigManager) -> HostStatus:
    live = mgr.live_rigs()
    held = sorted(mgr.budget.enclosures.values(), key=lambda e: e.key)
    return HostStatus(
        backend=mgr.backend.name,
        unavailable_reason=mgr.backend.unavailable_reason(),
        memory_budget_mb=mgr.budget_mb,
        held_mb=mgr.budget.held_mb(),
        resident_mb=sum(r.resident_mb for r in live) + sum(e.resident_mb for e in held),
        live_rigs=len(live),
        enclosures=[
            EnclosureView(
                scope=e.key,
                workspace_id=e.workspace_id,
                memory_mb=e.memory_mb,
                resident_mb=e.resident_mb,
                busy=e.busy(),
            )
            for e in held
        ],
    )


@op("rigs.status", kind="read", scope="server", server_owner=True)
async def rigs_status(ctx: OpContext, args: NoArgs) -> HostStatus:
    """This host's rigs: backend and whether it can run here, the memory budget and what is resident now."""
    mgr = manager(ctx)
    await mgr.measure()
    await mgr.budget.current_mb()
    return _host_status(mgr)


class BudgetArgs(Args):
    memory_budget_mb: Annotated[int, Field(ge=512, le=1024 * 1024, strict=True)] = Field(alias="memoryBudgetMb")


@op("rigs.setMemoryBudget", kind="mutate", scope="server", server_owner=True)
async def rigs_set_memory_budget(ctx: OpContext, args: BudgetArgs) -> HostStatus:
    """Set the resident-memory budget of all rigs on this host (MB); idle rigs over it are evicted now."""
    mgr = manager(ctx)
    await ctx.app.service(IdentityService).set_setting(MEMORY_BUDGET_SETTING, args.memory_budget_mb)
    mgr.budget_mb = args.memory_budget_mb
    await mgr.sweep()
    return _host_status(mgr)


def _refresh_view(record: Record | None) -> PackRefreshView | None:
    if record is None:
        return None
    return PackRefreshView(
        state=record.state,
        checked_at=record.checked_at,
        finished_at=record.finished_at,
        error=record.error,
        newer=list(record.newer),
    )


def _pack_views(mgr: RigManager) -> list[PackView]:
    return [
        PackView(
            name=p.name,
            surface=p.surface,
            revision=p.revision,
            state=p.state,
            step=p.step,
            step_index=p.step_index,
            steps=p.steps,
            error=p.error,
            label=(p.label or p.name)[:1].upper() + (p.label or p.name)[1:],
            engine=p.engine,
            built_at=p.built.built_at if p.built else None,
            archive_date=p.built.archive_date if p.built else None,
            archive_dates=dict(p.built.archive_dates) if p.built else {},
            refresh=_refresh_view(p.refresh),
        )
        for p in mgr.backend.packs()
    ]


async def _pack_list(ctx: OpContext) -> PackList:
    hours = await ctx.app.service(PackRefresh).interval_hours()
    return PackList(packs=_pack_views(manager(ctx)), refresh_hours=hours)


PACKS_POLL_S = 0.5  # how often a packs watch looks again (a build in another process shows only on disk)


@op("rigs.watchPacks", kind="watch", scope="server", server_owner=True, result=PackList, events=PackList)
async def rigs_watch_packs(ctx: OpContext, args: NoArgs) -> AsyncIterator[PackList]:
    """The image packs, then the whole list again at every change: a build starting (asked for here, or by the
    first rig, shell step or command agent that needs its pack, or by another process sharing the packs), each of
    its steps, its end (ready, or failed with the reason)."""
    shown = await _pack_list(ctx)
    yield shown
    while True:
        await asyncio.sleep(PACKS_POLL_S)  # what is on disk, not a domain time: the wall clock's
        now = await _pack_list(ctx)
        if now != shown:
            shown = now
            yield now


@op("rigs.packs", kind="read", scope="server", server_owner=True)
async def rigs_packs(ctx: OpContext, args: NoArgs) -> list[PackView]:
    """The image packs rigs boot from on this host: ready, missing, failed, or building with its current step."""
    return _pack_views(manager(ctx))


class BuildPackArgs(Args):
    name: StrictStr = Field(min_length=1, max_length=100)


@op("rigs.buildPack", kind="mutate", scope="server", server_owner=True, actions=["networkEgress", "packageInstall"])
async def rigs_build_pack(ctx: OpContext, args: BuildPackArgs) -> list[PackView]:
    """Start building an image pack in the background (it takes minutes); ``rigs.packs`` shows its progress."""
    mgr = manager(ctx)
    mgr.backend.build_pack(args.name)
    log.info("rigs: building pack %s, asked by %s", args.name, ctx.principal.label)
    return _pack_views(mgr)


class PackRefreshArgs(Args):
    hours: Annotated[int, Field(ge=0, le=MAX_PACK_REFRESH_HOURS, strict=True)]


@op("rigs.setPackRefresh", kind="mutate", scope="server", server_owner=True)
async def rigs_set_pack_refresh(ctx: OpContext, args: PackRefreshArgs) -> PackList:
    """Set the hours between checks of the image packs against their archives (0: never); binds at the next
    pass of the schedule, in every server sharing the data directory."""
    await ctx.app.service(IdentityService).set_setting(REFRESH_SETTING, args.hours)
    log.info("rigs: packs are checked every %d hours from now on, set by %s", args.hours, ctx.principal.label)
    return await _pack_list(ctx)


@op("rigs.checkPacks", kind="mutate", scope="server", server_owner=True, actions=["networkEgress", "packageInstall"])
async def rigs_check_packs(ctx: OpContext, args: NoArgs) -> PackList:
    """Check every ready pack against its archive now, whatever the schedule, and build the stale ones again in
    the background (the old one serves until the new one is ready); ``rigs.watchPacks`` shows how it goes. Another
    server sharing the packs may be checking them at this moment: then this asks nothing more."""
    reason = manager(ctx).backend.unavailable_reason()
    if reason is not None:
        raise Unavailable(f"packs cannot be checked: rigs cannot run on this host ({reason})")
    await ctx.app.service(PackRefresh).pass_once(now=True)
    log.info("rigs: packs checked against their archives, asked by %s", ctx.principal.label)
    return await _pack_list(ctx)


OPS: list[OpFunction] = [
    rigs_status,
    rigs_set_memory_budget,
    rigs_packs,
    rigs_watch_packs,
    rigs_build_pack,
    rigs_set_pack_refresh,
    rigs_check_packs,
]
