"""The rig hosts connected to this server, where new rigs go, and what happens when a host goes away.

A rig host's link (``link.HostLink``) is kept by the credential it proved. Placing a rig asks every connected
host whose credential serves the rig's workspace (``creds.serves``) for room: its budget (``--memory-budget``,
said in its hello, at most its credential's maximum) less what every server placed on it and has
not ended (``rig_placements``, the database's truth shared by servers on one PostgreSQL); the host with the most
room takes the rig, recorded there before it boots, so the next placement counts it. The rig host is the last
word on its budget: it refuses a start that would pass it (two servers placing at the same instant).

A link that ends (closed, or silent past ``wire.SILENCE_S``) starts the host's lease, ``LEASE_S``: a rig host
back within it finds its rigs as they were (terminals open over the old link ended); one not back loses them:
each fails (``rigs.closed`` with ``backendFailure``, the detail naming the host). A host that comes back without
some of its rigs (it restarted) loses those at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass

import sqlalchemy as sa

from hangar.core.context import AppContext
from hangar.errors import HangarError, Refused
from hangar.rigs.backends.base import RigBackend, RigHandle, RigSpec
from hangar.rigs.hosts.creds import serves
from hangar.rigs.hosts.link import HostLink
from hangar.rigs.hosts.remote import RemoteRig
from hangar.rigs.hosts.tables import rig_placements

log = logging.getLogger(__name__)

LEASE_S = 15.0  # how long a lost rig host's rigs wait for it before they fail


@dataclass(frozen=True)
class Room:
    host_id: str
    name: str
    budget_mb: int
    free_mb: int


class RemoteBackend(RigBackend):
    """Starting one rig on one rig host (what placement hands the opener)."""

    name = "enclosure"  # the rig host runs the enclosure backend

    def __init__(self, hosts: RigHosts, room: Room) -> None:
        self._hosts, self.room = hosts, room

    def unavailable_reason(self) -> str | None:
        return None if self._hosts.link(self.room.host_id) is not None else f"rig host {self.room.name!r} went away"

    async def start(self, spec: RigSpec, progress: Callable[[str], None]) -> RigHandle:
        return await self._hosts.start(self.room, spec, progress)


class RigHosts:
    def __init__(self, app: AppContext) -> None:
        self.app = app
        self._links: dict[str, HostLink] = {}
        self._leases: dict[str, asyncio.Task[None]] = {}
        self._rigs: dict[str, RemoteRig] = {}

    def link(self, host_id: str) -> HostLink | None:
        return self._links.get(host_id)

    def connected(self) -> list[HostLink]:
        return list(self._links.values())

    # -- links coming and going ------------------------------------------------------------------------------

    async def attach(self, link: HostLink) -> None:
        """A rig host said hello: it serves its rigs again (those it no longer runs fail now)."""
        old = self._links.get(link.host_id)
        if old is not None:
            await old.close(1000, "the rig host connected again")
        self._links[link.host_id] = link
        lease = self._leases.pop(link.host_id, None)
        if lease is not None:
            lease.cancel()
        log.warning("rig hosts: %r (%s) connected with a budget of %d MB", link.name, link.host_id, link.budget_mb)
        for rig in self._of(link.host_id):
            if rig.spec.rig_id not in link.rigs:
                await self._lose(rig, f"rig host {link.name!r} came back without it (it restarted)")
        for rig_id in link.rigs - set(self._rigs):  # ended here while the host was away: it goes there too
            with contextlib.suppress(HangarError):
                await link.call("close", rig=rig_id)

    def detach(self, link: HostLink) -> None:
        """The link ended: the host's rigs wait ``LEASE_S`` for it."""
        if self._links.get(link.host_id) is not link:
            return
        del self._links[link.host_id]
        log.warning(
            "rig hosts: lost %r (%s); its rigs fail unless it is back within %.0f s", link.name, link.host_id, LEASE_S
        )
        self._leases[link.host_id] = asyncio.create_task(self._lapse(link), name=f"rigs:hostLease:{link.host_id}")

    async def revoked(self, host_id: str) -> None:
        """The host's credential was revoked: its rigs fail now, with no lease."""
        for rig in self._of(host_id):
            await self._lose(rig, "the rig host's credential was revoked")

    async def _lapse(self, link: HostLink) -> None:
        await asyncio.sleep(LEASE_S)
        self._leases.pop(link.host_id, None)
        if link.host_id in self._links:
            return
        for rig in self._of(link.host_id):
            await self._lose(rig, f"rig host {link.name!r} was lost and not back within {LEASE_S:.0f} s")

    def _of(self, host_id: str) -> list[RemoteRig]:
        return [r for r in self._rigs.values() if r.host_id == host_id]

    async def _lose(self, rig: RemoteRig, detail: str) -> None:
        log.warning("rig hosts: rig %s: %s", rig.spec.rig_id, detail)
        rig.died(detail)
        await self.ended(rig.spec.rig_id)

    async def rig_died(self, host_id: str, rig_id: str) -> None:
        rig = self._rigs.get(rig_id)
        if rig is not None and rig.host_id == host_id:
            await self._lose(rig, "the rig's processes died underneath it on its rig host")

    # -- placement -------------------------------------------------------------------------------------------

    async def rooms(self, workspace_id: str) -> list[Room]:
        """Every connected host whose credential serves ``workspace_id``, with its budget and free room now, the
        roomiest first."""
        links = [link for link in self._links.values() if serves(link.credential, workspace_id)]
        if not links:
            return []
        p = rig_placements.c
        async with self.app.dbs.server.connect() as conn:
            rows = (
                await conn.execute(
                    sa.select(p.host_id, sa.func.sum(p.memory_mb))
                    .where(p.host_id.in_([link.host_id for link in links]), p.ended_at.is_(None))
                    .group_by(p.host_id)
                )
            ).all()
        held = {str(host): int(mb or 0) for host, mb in rows}
        rooms = [
            Room(link.host_id, link.name, link.budget_mb, link.budget_mb - held.get(link.host_id, 0)) for link in links
        ]
        return sorted(rooms, key=lambda r: -r.free_mb)

    async def place(self, need_mb: int, workspace_id: str) -> RemoteBackend | None:
        """A rig host serving ``workspace_id`` with room for ``need_mb`` more, or None."""
        for room in await self.rooms(workspace_id):
            if room.free_mb >= need_mb:
                return RemoteBackend(self, room)
        return None

    async def start(self, room: Room, spec: RigSpec, progress: Callable[[str], None]) -> RigHandle:
        link = self._links.get(room.host_id)
        if link is None:
            raise Refused(f"rig host {room.name!r} went away before rig {spec.rig_id} started")
        if not serves(link.credential, spec.workspace_id):  # placement chose among those serving it: kept so
            raise Refused(f"rig host {room.name!r} does not run rigs of workspace {spec.workspace_id}")
        now = self.app.clock.now()
        async with self.app.dbs.server.begin() as conn:
            await conn.execute(
                rig_placements.insert().values(
                    rig_id=spec.rig_id,
                    workspace_id=spec.workspace_id,
                    host_id=room.host_id,
                    memory_mb=spec.memory_mb,
                    placed_at=now,
                    ended_at=None,
                )
            )
        progress(f"starting on rig host {room.name!r}")
        try:
            await link.call(
                "start",
                spec={
                    "rigId": spec.rig_id,
                    "workspaceId": spec.workspace_id,
                    "surface": spec.surface,
                    "memoryMb": spec.memory_mb,
                    "vcpus": spec.vcpus,
                    "allowHosts": sorted(spec.allow_hosts),
                    "diskMb": spec.disk_mb,
                },
            )
        except BaseException:
            await self.ended(spec.rig_id)
            raise
        rig = RemoteRig(self, room.host_id, room.name, spec)
        self._rigs[spec.rig_id] = rig
        return rig

    async def ended(self, rig_id: str) -> None:
        """The rig no longer holds its host's memory."""
        self._rigs.pop(rig_id, None)
        p = rig_placements.c
        async with self.app.dbs.server.begin() as conn:
            await conn.execute(
                rig_placements.update()
                .where(p.rig_id == rig_id, p.ended_at.is_(None))
                .values(ended_at=self.app.clock.now())
            )

    async def aclose(self) -> None:
        for lease in self._leases.values():
            lease.cancel()
        for link in list(self._links.values()):
            with contextlib.suppress(Exception):
                await link.close(1001, "the server is stopping")
        self._links.clear()
