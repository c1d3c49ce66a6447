"""The manager's side of dev domains: which rig and port a name reaches, and the live rigs' lanes, resolver names
and HTTPS leaf kept in step with the ``rig_dev_domains`` table.

Every routed connection reads the table (``devdomains.find``): the row is the authority, and another process may
have changed it. A change made here is applied to this process's live rigs before the op answers; a change made
by any process is also announced by ``rigs.devDomainChanged``, which every server process follows, so rigs in
another process catch up within the event tail interval. Routing stays inside a space: a name is looked up in the
workspace and used only when its row belongs to the space of the rig asking.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from hangar.core.event_types import StoredEvent
from hangar.errors import Elsewhere, HangarError, NotFound, Unavailable
from hangar.rigs.backends.capabilities import RigNetwork
from hangar.rigs.devdomains import names as devdomains
from hangar.rigs.devdomains.crossing import cross
from hangar.rigs.devdomains.lanes import DevLanes, LaneMiss, LaneStatus, Streams, TlsContext
from hangar.rigs.devdomains.tls import DevTls
from hangar.rigs.live.rigs import LiveRig
from hangar.rigs.model import LIVE_PHASES

if TYPE_CHECKING:
    from hangar.core.context import AppContext

Reach = Callable[[str, str], Awaitable[RigNetwork]]
"""The handle of a rig of this process that a dev domain's traffic goes to, woken when parked (the manager's)."""

log = logging.getLogger(__name__)


def _scope(ws: str, space_id: str) -> str:
    return f"{ws}/{space_id}"


class DevRouter:
    def __init__(self, app: AppContext, reach: Reach) -> None:
        self._app, self._reach = app, reach
        self.tls = DevTls(app.datadir.sub("rigs") / "tls")
        self._lanes: dict[str, LiveRig] = {}  # rigs of this process carrying lanes, by id
        self._https_failure: str | None = None  # why issuing a leaf failed last (a CA whose files cannot be read)

    def https_reason(self) -> str | None:
        """Why dev domains have no HTTPS lane on this host (None when they have one)."""
        return self._https_failure

    async def names(self, ws: str, space_id: str) -> frozenset[str]:
        rows = await devdomains.domains_of(await self._app.dbs.workspace(ws), space_id)
        return frozenset(r.domain for r in rows)

    async def _issue(self, ws: str, space_id: str, names: frozenset[str]) -> bool:
        """The space's leaf issued for ``names``; False (with the reason kept) when it cannot be."""
        try:
            await asyncio.to_thread(self.tls.leaf, _scope(ws, space_id), names)
        except HangarError as exc:
            self._https_failure = f"dev-domain certificates cannot be issued: {exc.message}"
            log.warning("rigs: %s", self._https_failure)
            return False
        self._https_failure = None
        return True

    async def attach(self, live: LiveRig) -> LaneStatus:
        """Start the dev-domain lanes on a live rig (browser rigs get them at boot) and give its resolver the
        space's names. Without a leaf (its CA cannot be read) only the HTTP lane opens; the status says why."""
        handle = live.handle
        if handle is None:
            raise Unavailable(f"rig {live.id} is not running")
        names = await self.names(live.ws, live.space_id)
        tls: TlsContext | None = None
        if await self._issue(live.ws, live.space_id, names):
            scope = _scope(live.ws, live.space_id)
            tls = lambda: self.tls.context(scope)  # noqa: E731 - read at each connection
        ws, space = live.ws, live.space_id

        async def route(name: str) -> Streams:
            return await self.route(ws, space, name)

        status = await DevLanes(route, tls, self.https_reason()).start(handle)
        await handle.set_local_names(names)
        self._prune()
        self._lanes[live.id] = live
        return status

    def _prune(self) -> None:
        """Forget rigs that ended (their lanes closed with them)."""
        for rig_id, live in list(self._lanes.items()):
            if live.phase not in LIVE_PHASES:
                del self._lanes[rig_id]

    async def route(self, ws: str, space_id: str, name: str, *, relayed: bool = False) -> Streams:
        """A connection to the guest port ``name`` maps to, for a rig of ``space_id``; ``LaneMiss`` says why not.
        A parked target is woken first; the traffic counts as the target's activity. A target another server
        runs is reached through that server (``crossing``), unless this route was asked by one (``relayed``)."""
        entry = await devdomains.find(await self._app.dbs.workspace(ws), name)
        if entry is None or entry.space_id != space_id:
            raise LaneMiss(404, f"There is no dev domain {name} in this space (map one with rig.setDevDomain).")
        try:
            handle = await self._reach(ws, entry.rig_id)
        except Elsewhere as moved:
            if relayed:
                raise LaneMiss(502, f"{name} points at rig {entry.rig_id}, which this server does not run.") from None
            return await cross(self._app, moved, ws, space_id, name)
        except NotFound as exc:
            why = f"{name} points at rig {entry.rig_id}, which is not running ({exc.message}); map it to a running rig."
            raise LaneMiss(502, why) from exc
        return await handle.connect(entry.guest_port)  # its errors become the lane's 502 page

    async def refresh(self, ws: str, space_id: str) -> None:
        """Bring the space's leaf and its live lane-carrying rigs' resolver names in step with the table."""
        names = await self.names(ws, space_id)
        await self._issue(ws, space_id, names)
        self._prune()
        for rig_id, live in list(self._lanes.items()):
            if live.ws == ws and live.space_id == space_id and live.handle is not None:
                try:
                    await live.handle.set_local_names(names)
                except HangarError as exc:
                    log.warning("rigs: dev-domain names of %s not updated: %s", rig_id, exc.message)

    async def on_event(self, ev: StoredEvent) -> None:
        """``rigs.devDomainChanged`` from any process."""
        space_id = ev.payload.get("spaceId")
        if isinstance(space_id, str):
            await self.refresh(ev.workspace_id, space_id)
