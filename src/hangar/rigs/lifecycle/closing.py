"""How rigs end: closed on request, by the sweep's rules or by an ending event, or failed underneath.

Every end goes the same way: the row says ``closing`` (or ``failed``), the boot and the watcher stop, the forwards
and the handle are released, the home is removed, the rig leaves ``LiveRigs``, and the end is stored together
with ``rigs.closed`` (and ``rigs.reaped`` for a reaping) in one transaction. A second reason arriving while one
is under way waits for the first rather than tearing down twice. Opening and the sweep end rigs through this.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from hangar.core.beneath import remove_path
from hangar.core.context import AppContext
from hangar.core.disks import ScopeDisks
from hangar.core.event_types import StoredEvent
from hangar.core.principal import Principal
from hangar.errors import HangarError, NotFound
from hangar.rigs import hooks
from hangar.rigs.events import RigClosedEvent, RigReaped
from hangar.rigs.lifecycle.control import RigControl
from hangar.rigs.lifecycle.holder import refuse_if_elsewhere
from hangar.rigs.lifecycle.ownership import RigOwnership
from hangar.rigs.live.rigs import LiveRig, LiveRigs
from hangar.rigs.model import LIVE_PHASES, REAP_REASONS, CloseReason, Phase, RigRecord
from hangar.rigs.store import RigStore

log = logging.getLogger(__name__)


async def discard_home(app: AppContext, home: Path) -> None:
    """A rig's home goes with the rig: its disk detached and deleted, what the rig wrote there removed without
    following a symlink."""
    disks = app.maybe_service(ScopeDisks)
    if disks is not None:
        await disks.remove(home)
    else:
        with contextlib.suppress(OSError):  # a live process still writing there: the next sweep removes it
            await asyncio.to_thread(remove_path, home)


class RigCloser:
    def __init__(
        self, app: AppContext, store: RigStore, rigs: LiveRigs, ownership: RigOwnership, control: RigControl
    ) -> None:
        self.app = app
        self.store = store
        self.rigs = rigs
        self.ownership = ownership
        self.control = control
        # Set when the server stops: an end it can no longer record is logged, not raised (nobody would hear it).
        self.stopping = False
        # Writes the rig's held screenshot runs (``foldlog``) so they come before its last row.
        self.before_end: Callable[[str, str], Awaitable[None]] | None = None

    async def _end_row(self, live: LiveRig, verb: str, details: dict[str, Any]) -> None:
        if self.before_end is not None:
            await self.before_end(live.ws, live.id)
        await self.store.append_action(live.ws, live.id, principal="server", verb=verb, details=details)

    async def close(self, ws: str, rig_id: str, reason: CloseReason, principal: Principal) -> RigRecord:
        """Close a rig by id for a caller; its record as stored once closed."""
        live = self.rigs.find(ws, rig_id)
        if live is not None:
            self.rigs.touch(live, principal)
            await self.close_live(live, reason)
        rec = await self.store.get(ws, rig_id)
        if rec is None:
            raise NotFound(f"no rig {rig_id} in this workspace")
        if live is None:
            refuse_if_elsewhere(rec, self.app.settings.serving_origin)  # another server runs it and closes it
        if rec.phase in LIVE_PHASES:  # a row without a live rig behind it (should not happen): settle it
            await self.store.update(ws, rig_id, phase=Phase.closed, close_reason=reason, closed_at=self.app.clock.now())
            rec = await self.store.get(ws, rig_id)
            assert rec is not None
        return rec

    async def close_live(self, live: LiveRig, reason: CloseReason, *, cause: str | None = None) -> None:
        """Close a live rig for ``reason``; ``cause`` says what reaped it (``idle``, ``ttl``, ``memory``)."""
        if live.phase not in LIVE_PHASES:
            # Closing already (another reason got there first): wait for it to finish.
            await live.ended.wait()
            return
        live.phase = Phase.closing
        try:
            await self.store.update(live.ws, live.id, phase=Phase.closing)
            await self._teardown(live)
            live.phase = Phase.closed
            await self._end_row(live, "close", {"reason": reason.value, "cause": cause})
            fields = {"phase": Phase.closed, "close_reason": reason, "closed_at": self.app.clock.now()}
            await self._record_end(live, reason, cause, controller=None, **fields)
        finally:
            live.phase = Phase.closed
            live.notify_phase(reason.value)
            live.ended.set()

    async def fail(self, live: LiveRig, detail: str) -> None:
        """End a rig whose boot failed or whose processes died: ``failed`` with ``backendFailure``."""
        if live.phase not in LIVE_PHASES:
            await live.ended.wait()
            return
        live.phase = Phase.failed
        live.status_detail = detail
        try:
            await self._teardown(live)
            await self._end_row(live, "failed", {"reason": CloseReason.backend_failure.value})
            await self._record_end(
                live,
                CloseReason.backend_failure,
                None,
                phase=Phase.failed,
                close_reason=CloseReason.backend_failure,
                status_detail=detail[:500],
                closed_at=self.app.clock.now(),
                controller=None,
            )
        finally:
            live.notify_phase(CloseReason.backend_failure.value)
            live.ended.set()

    async def close_all(self, reason: CloseReason) -> None:
        """Close every live rig at once (the server stopping); one failing does not keep the others open."""
        await asyncio.gather(*(self.close_live(r, reason) for r in self.rigs.all()), return_exceptions=True)

    async def on_ending_event(self, ev: StoredEvent) -> None:
        """An archived space ends its rigs; a member who left takes the rigs they opened with them; a person who
        left or fell below member loses their kept terminals on every rig of the workspace at once (the sweep
        also notices lost membership and access, for changes made without an event)."""
        in_ws = [r for r in self.rigs.all() if r.ws == ev.workspace_id]
        space_id = hooks.ended_space(ev)
        for live in [r for r in in_ws if r.space_id == space_id]:
            await self.close_live(live, CloseReason.conversation_ended)
        user_id = hooks.removed_member(ev)
        for live in [r for r in in_ws if user_id is not None and r.opener_user_id == user_id]:
            await self.close_live(live, CloseReason.workspace_gone)
        changed = hooks.changed_member(ev)
        if changed is not None and not await hooks.may_use_lanes(self.app, ev.workspace_id, changed):
            for live in [r for r in in_ws if self.rigs.get(r.id) is r]:  # those still open
                await live.terminals.close_person(changed)  # shown or kept, no shell of theirs outlives their access
                await self.control.hand_back_if_lost(live)

    async def _teardown(self, live: LiveRig) -> None:
        # The boot or the watcher may be the task ending the rig (a failed boot, a death): it must not cancel itself.
        current = asyncio.current_task()
        if live.boot is not None and not live.boot.done() and live.boot is not current:
            live.boot.cancel()
            await asyncio.gather(live.boot, return_exceptions=True)
        if live.watcher is not None and live.watcher is not current:
            live.watcher.cancel()
            await asyncio.gather(live.watcher, return_exceptions=True)
        await live.terminals.close_all()
        handle = live.handle
        if handle is not None:
            with contextlib.suppress(HangarError):
                await live.ports.aclose(handle)
            try:
                await handle.aclose()
            except Exception:
                log.exception("rigs: destroying %s failed", live.id)
        await discard_home(self.app, live.home)
        self.rigs.forget(live)
        self.ownership.release(live.id)

    async def _record_end(self, live: LiveRig, reason: CloseReason, cause: str | None, **fields: Any) -> None:
        """Store how the rig ended and publish ``rigs.closed`` (and ``rigs.reaped`` for a reaping) in one
        transaction."""
        closed = RigClosedEvent(
            workspace_id=live.ws,
            rig_id=live.id,
            space_id=live.space_id,
            surface=live.surface.value,
            reason=reason.value,
            phase="failed" if fields.get("phase") is Phase.failed else "closed",
        )
        try:
            async with self.app.bus.transaction(live.ws) as tx:
                await self.store.update(live.ws, live.id, conn=tx.conn, **fields)
                await tx.publish(closed)
                if reason in REAP_REASONS and cause in ("idle", "ttl", "memory"):
                    await tx.publish(
                        RigReaped(
                            workspace_id=live.ws,
                            rig_id=live.id,
                            space_id=live.space_id,
                            reason=reason.value,
                            cause=cause,
                            agent=live.last_actor,
                        )
                    )
        except Exception:
            if not self.stopping:
                raise
            log.warning("rigs: the closing of %s was not recorded (the server is stopping)", live.id)
