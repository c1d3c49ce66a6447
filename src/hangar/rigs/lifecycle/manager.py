"""The rig manager: what agents and people do with a rig (exec, terminal and watch lanes, take-over, sharing
ports) on top of the lifecycle (``lifecycle.RigLifecycle``). Other parts find it as ``ctx.service(RigManager)``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any, Literal

from hangar.core.context import AppContext
from hangar.core.principal import Principal
from hangar.errors import HangarError, Refused
from hangar.rigs import hooks
from hangar.rigs.backends.base import ExecResult, RigBackend, RigHandle
from hangar.rigs.devdomains.router import DevRouter
from hangar.rigs.errors import BackendFailure, ControlHeld
from hangar.rigs.events import RigControlChanged, RigDevDomainChanged
from hangar.rigs.lifecycle.lifecycle import MEMORY_BUDGET_SETTING, RigLifecycle
from hangar.rigs.live.rigs import LiveRig
from hangar.rigs.model import Surface

log = logging.getLogger(__name__)

WATCH_QUEUE = 1000  # events a watcher may fall behind by before it loses some
WATCH_OUTPUT_CHARS = 64 * 1024  # the tail of each output stream a watcher is shown

__all__ = ["MEMORY_BUDGET_SETTING", "RigManager"]


class RigManager(RigLifecycle):
    def __init__(self, app: AppContext, backend: RigBackend, **kwargs: Any) -> None:
        super().__init__(app, backend, **kwargs)
        self.dev = DevRouter(self.app, self.reach)  # dev domains: lanes, resolver names, the HTTPS leaf

    async def start(self) -> None:
        await super().start()
        self._subs.append(
            self.app.bus.subscribe(self.dev.on_event, name="rigs:devDomains", types=(RigDevDomainChanged.type,))
        )

    async def _prepare_ready(self, live: LiveRig, handle: RigHandle) -> str | None:
        """Browser rigs get the dev-domain lanes and their space's names before anything runs in them."""
        if live.surface is not Surface.browser:
            return None
        try:
            status = await self.dev.attach(live)
        except HangarError as exc:
            log.warning("rigs: dev-domain lanes of %s not started: %s", live.id, exc.message)
            return f"dev domains unavailable in this rig: {exc.message}"
        return None if status.https else f"no HTTPS dev-domain lane: {status.https_reason}"

    async def reach(self, ws: str, rig_id: str) -> RigHandle:
        """The handle of a rig of this process that traffic is routed to (a dev domain's target): woken when
        parked, and the traffic counts as its activity. ``NotFound`` when it does not run here."""
        live = self.live(ws, rig_id)
        handle = await self.upkeep.awake(live)
        self.rigs.touch(live)
        return handle

    def check_control(self, live: LiveRig, principal: Principal, what: str) -> None:
        if live.controller is not None and live.controller != principal.user_id:
            raise ControlHeld(f"{what} refused: a person holds control of rig {live.id}; observations stay allowed")

    @contextlib.asynccontextmanager
    async def acting(
        self, ws: str, rig_id: str, principal: Principal, *, mutating: bool, what: str
    ) -> AsyncIterator[tuple[LiveRig, RigHandle]]:
        """Run one action on a rig: take-over checked, booted, woken, pinned while it runs."""
        live = await self.get_live(ws, rig_id)
        if mutating:
            self.check_control(live, principal, what)
        live.busy += 1
        try:
            handle = await self.upkeep.awake(live)
            self.rigs.touch(live, principal)
            try:
                yield live, handle
            except HangarError:
                raise
            except Exception as exc:
                log.exception("rigs: %s on %s failed", what, rig_id)
                raise BackendFailure(f"{what} failed inside rig {rig_id}") from exc
        finally:
            live.busy -= 1
            self.rigs.touch(live)

    async def exec(
        self, ws: str, rig_id: str, command: str, timeout_s: float | None, principal: Principal
    ) -> ExecResult:
        async with self.acting(ws, rig_id, principal, mutating=True, what="rig.exec") as (live, handle):
            live.notify({"type": "exec", "by": principal.label, "command": command})
            result = await handle.exec(command, timeout_s=timeout_s)
            live.notify(
                {
                    "type": "execResult",
                    "exitCode": result.exit_code,
                    "timedOut": result.timed_out,
                    "stdout": result.stdout[-WATCH_OUTPUT_CHARS:],
                    "stderr": result.stderr[-WATCH_OUTPUT_CHARS:],
                }
            )
        await self.log_action(
            ws,
            rig_id,
            principal,
            "exec",
            {
                "command": hooks.sensitive(command),
                "exitCode": result.exit_code,
                "timedOut": result.timed_out,
                "stdoutBytes": len(result.stdout.encode()),
                "stderrBytes": len(result.stderr.encode()),
            },
        )
        return result

    @contextlib.asynccontextmanager
    async def lane(self, ws: str, rig_id: str) -> AsyncIterator[LiveRig]:
        """An open terminal or watch lane: pins the rig against parking, idle reaping and eviction."""
        live = await self.get_live(ws, rig_id)
        live.lanes += 1
        try:
            yield live
        finally:
            live.lanes -= 1
            self.rigs.touch(live)

    @contextlib.asynccontextmanager
    async def watch(self, ws: str, rig_id: str) -> AsyncIterator[tuple[LiveRig, asyncio.Queue[dict[str, Any]]]]:
        """A watch lane: the rig's activity as events (phases, commands and results, control, ports); it pins
        the rig like a terminal does."""
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue(maxsize=WATCH_QUEUE)
        async with self.lane(ws, rig_id) as live:
            live.watchers.add(queue)
            try:
                yield live, queue
            finally:
                live.watchers.discard(queue)

    # -- take-over ----------------------------------------------------------------------------------------

    async def take_control(self, ws: str, rig_id: str, principal: Principal) -> LiveRig:
        live = await self.get_live(ws, rig_id)
        if live.controller == principal.user_id:
            return live
        if live.controller is not None:
            raise ControlHeld(f"rig {rig_id} is already controlled by another person; they must hand it back")
        await self._set_controller(live, principal, principal.user_id, "takeControl", {})
        return live

    async def release_control(self, ws: str, rig_id: str, principal: Principal, *, force: bool) -> LiveRig:
        live = await self.get_live(ws, rig_id)
        if live.controller is None:
            return live
        if live.controller != principal.user_id and not force:
            raise ControlHeld(f"only the person holding rig {rig_id} (or a workspace admin) can hand it back")
        await self._set_controller(live, principal, None, "releaseControl", {"forced": force})
        return live

    async def _set_controller(
        self, live: LiveRig, principal: Principal, user_id: str | None, verb: str, details: dict[str, Any]
    ) -> None:
        live.controller = user_id
        live.notify({"type": "control", "controller": user_id})
        self.rigs.touch(live)
        change: Literal["takeover", "handback"] = "takeover" if user_id is not None else "handback"
        async with self.app.bus.transaction(live.ws) as tx:
            await self.store.update(live.ws, live.id, conn=tx.conn, controller=user_id)
            await tx.publish(
                RigControlChanged(
                    workspace_id=live.ws,
                    rig_id=live.id,
                    space_id=live.space_id,
                    change=change,
                    user_id=principal.user_id,
                )
            )
        await self.log_action(live.ws, live.id, principal, verb, details)

    # -- sharing ports ------------------------------------------------------------------------------------

    async def share_port(self, ws: str, rig_id: str, guest_port: int, share: bool, principal: Principal) -> LiveRig:
        live = await self.get_live(ws, rig_id)
        if live.surface is not Surface.terminal:
            # A browser's only listening ports are its automation endpoint, which is the server's alone.
            raise Refused(f"rig {rig_id} is a {live.surface.value} rig; only terminal rigs share ports")
        async with self.acting(ws, rig_id, principal, mutating=True, what="rig.sharePort") as (live, handle):
            await self.upkeep.sync_ports(live)
            if share:
                await live.ports.share_lan(handle, guest_port)
            else:
                await live.ports.unshare_lan(handle, guest_port)
        await self.log_action(ws, rig_id, principal, "sharePort", {"guestPort": guest_port, "shared": share})
        return live
