"""Keeping live rigs within the rules while they run: the periodic sweep (park, reap, evict, close the rigs of
members who left and the kept terminals of people who lost access), the memory budget and the measuring it rests on,
waking a parked rig for its next action, and mirroring terminal rigs' listening ports.

The decisions are ``policy``'s (pure); this carries them out, and ends rigs through ``RigCloser``. The memory
budget is ``budget.MemoryBudget``, shared with the enclosures user code runs in: the sweep and making room for a
new rig evict against it, under its lock.
"""

from __future__ import annotations

import asyncio
import logging

from hangar.core.addresses import server_ports
from hangar.core.context import AppContext
from hangar.errors import HangarError, NotFound
from hangar.rigs import hooks
from hangar.rigs.backends.base import RigHandle
from hangar.rigs.lifecycle.budget import MemoryBudget
from hangar.rigs.lifecycle.closing import RigCloser
from hangar.rigs.live.notices import PortsNotice
from hangar.rigs.live.rigs import LiveRig, LiveRigs
from hangar.rigs.model import MAX_LISTENING_PORTS, CloseReason, Phase, Surface, listening_within
from hangar.rigs.policy import Park, evict, lifecycle
from hangar.rigs.store import RigStore

log = logging.getLogger(__name__)


class RigUpkeep:
    def __init__(
        self, app: AppContext, store: RigStore, rigs: LiveRigs, closer: RigCloser, budget: MemoryBudget
    ) -> None:
        self.app = app
        self.store = store
        self.rigs = rigs
        self.closer = closer
        self.budget = budget
        # The background sweep and an explicit one (an op, a test) must not interleave: a caller whose sweep
        # returns has seen every decision of the rules carried out, including closes another sweep began.
        self._sweep_lock = asyncio.Lock()

    # -- the periodic sweep and the memory budget ---------------------------------------------------------

    async def sweep(self) -> None:
        """Measure, then park, reap, evict and close rigs whose owners are gone, as the rules say now."""
        async with self._sweep_lock:
            await self._sweep()

    async def _sweep(self) -> None:
        await self.measure()
        now = self.app.clock.monotonic()
        for decision in lifecycle(self.rigs.states(), now):
            target = self.rigs.get(decision.rig_id)
            if target is None:
                continue
            if isinstance(decision, Park):
                await self._park(target)
            else:
                await self.closer.close_live(target, decision.reason, cause=decision.cause)
        async with self.budget.lock:
            await self.budget.carry_out(evict(self.budget.states(), await self.budget.current_mb()))
        for live in self.rigs.all():
            if not await hooks.still_member(self.app, live.ws, live.opener_user_id):
                await self.closer.close_live(live, CloseReason.workspace_gone)
            else:
                await self._close_terminals_without_access(live)
                await self.closer.control.hand_back_if_lost(live)
                await live.terminals.reap(now, self.app.settings.terminal_keep_seconds)

    async def _close_terminals_without_access(self, live: LiveRig) -> None:
        """Close the kept terminals of people no longer member or above of the rig's workspace (their role as
        stored now: a change made without an event, or by another process, is seen here)."""
        for user_id in live.terminals.people():
            if not await hooks.may_use_lanes(self.app, live.ws, user_id):
                await live.terminals.close_person(user_id)

    async def make_room(self, need_mb: int) -> None:
        """With the budget's lock held: make room for a new rig's ceiling, evicting what is idle, LRU first."""
        await self.measure()
        await self.budget.fit(need_mb, "rig")

    async def measure(self) -> None:
        """Refresh every running rig's resident memory (parked rigs still hold theirs), and the enclosures'."""
        await self.budget.measure()
        for live in self.rigs.all():
            if live.handle is not None and live.phase in (Phase.ready, Phase.parked):
                try:
                    mb = await live.handle.resident_mb()
                except HangarError:
                    continue
                if mb != live.resident_mb:
                    live.resident_mb = mb
                    await self.store.update(live.ws, live.id, resident_mb=mb)

    # -- parking and waking -------------------------------------------------------------------------------

    async def _park(self, live: LiveRig) -> None:
        async with live.lock:
            if live.phase is not Phase.ready or live.handle is None or live.lanes or live.busy:
                return
            try:
                await live.handle.park()
            except HangarError as exc:
                log.warning("rigs: parking %s failed: %s", live.id, exc.message)
                return
            live.phase = Phase.parked
            await self.store.update(live.ws, live.id, phase=Phase.parked)
            live.notify_phase()
        await self.store.append_action(live.ws, live.id, principal="server", verb="park", details={})

    async def awake(self, live: LiveRig) -> RigHandle:
        """The handle of a rig ready for an action: its boot waited for, woken when parked; ``NotFound`` when it
        ended meanwhile."""
        if live.phase is Phase.provisioning and live.boot is not None:
            await asyncio.shield(live.boot)
        async with live.lock:
            if live.phase is Phase.parked and live.handle is not None:
                await live.handle.wake()
                live.phase = Phase.ready
                await self.store.update(live.ws, live.id, phase=Phase.ready)
                live.notify_phase()
        if live.phase is not Phase.ready or live.handle is None:
            raise NotFound(f"rig {live.id} is {live.phase.value}; open a new one")
        return live.handle

    # -- ports --------------------------------------------------------------------------------------------

    async def poll_ports(self) -> None:
        """Mirror every awake rig's listening ports (called about every four seconds)."""
        for live in self.rigs.all():
            # Browser rigs are not polled: they listen on their automation ports, forwarded once at boot.
            if live.surface is not Surface.terminal:
                continue
            if live.phase is Phase.ready and live.handle is not None and live.handle.alive():
                await self.sync_ports(live)

    async def sync_ports(self, live: LiveRig) -> None:
        handle = live.handle
        if handle is None or live.surface is not Surface.terminal:
            return
        try:
            async with live.lock:
                if live.phase is not Phase.ready:
                    return
                listening, cut = listening_within(await handle.listening_ports())
                if cut and not live.ports.flooded:
                    log.warning(
                        "rigs: %s reports %d listening ports more than the %d taken in; they are ignored",
                        live.id,
                        cut,
                        MAX_LISTENING_PORTS,
                    )
                live.ports.flooded = bool(cut)
                before = live.ports.rows()
                # A rig's forward never takes one of the server's own port numbers, so a restarted server finds
                # them free.
                fresh = await live.ports.sync(handle, listening, server_ports(self.app.settings))
                after = live.ports.rows()
                if after != before:
                    live.notify(PortsNotice(ports=after))
        except HangarError as exc:
            log.warning("rigs: port poll of %s failed: %s", live.id, exc.message)
            return
        if fresh:
            await self.store.append_action(
                live.ws, live.id, principal="server", verb="portsNotForwarded", details={"guestPorts": fresh}
            )
