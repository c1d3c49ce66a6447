"""The host's rig ops, for the server owner (``rigs.*``): the backend and memory budget (``rigs.status``,
``rigs.setMemoryBudget``) and the image packs rigs boot from (``rigs.packs``, ``rigs.watchPacks``,
``rigs.buildPack``)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Annotated

from pydantic import Field, StrictStr

from hangar.core.part import OpFunction
from hangar.identity import IdentityService
from hangar.rigs.lifecycle.budget import MEMORY_BUDGET_SETTING
from hangar.rigs.lifecycle.manager import RigManager
from hangar.rigs.ops.rig import manager
from hangar.rigs.results import EnclosureView, HostStatus, PackList, PackView
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
        )
        for p in mgr.backend.packs()
    ]


PACKS_POLL_S = 0.5  # how often a packs watch looks again (a build in another process shows only on disk)


@op("rigs.watchPacks", kind="watch", scope="server", server_owner=True, result=PackList, events=PackList)
async def rigs_watch_packs(ctx: OpContext, args: NoArgs) -> AsyncIterator[PackList]:
    """The image packs, then the whole list again at every change: a build starting (asked for here, or by the
    first rig, shell step or command agent that needs its pack, or by another process sharing the packs), each of
    its steps, its end (ready, or failed with the reason)."""
    mgr = manager(ctx)
    shown = PackList(packs=_pack_views(mgr))
    yield shown
    while True:
        await asyncio.sleep(PACKS_POLL_S)  # what is on disk, not a domain time: the wall clock's
        now = PackList(packs=_pack_views(mgr))
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


OPS: list[OpFunction] = [rigs_status, rigs_set_memory_budget, rigs_packs, rigs_watch_packs, rigs_build_pack]
