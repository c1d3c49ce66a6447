"""Port forwards of one rig: the guest's listening TCP ports mirrored on host loopback.

The manager polls the guest about every four seconds and hands the listening set to ``PortForwards.sync``:
up to 16 ports are forwarded; further ports are listed as not forwarded and logged once; a port that stops
listening loses its forward, freeing a slot for the next. "Share on local network" adds a second, OS-assigned
listener on all interfaces for one forwarded port, on request only.

Every forward of a rig listens on the rig's own loopback address (``loopback``, claimed at its first forward and
released with the last), never on ``127.0.0.1``, and prefers the guest's own port number there. It falls back to
an OS-assigned port on that address when the number is taken (a host service listening on every interface
holds it) or when the server's own configuration names it (``reserved``: its listener, its site, the ports of
its public origins), so a restarted server always finds its ports free.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from hangar.errors import Conflict, HangarError, InvalidArgs
from hangar.rigs import loopback
from hangar.rigs.backends.base import RigHandle
from hangar.rigs.model import MAX_FORWARDED_PORTS
from hangar.rigs.results import PortRow

log = logging.getLogger(__name__)

ALL_INTERFACES = "0.0.0.0"
_LOGGED_PORTS = 16  # port numbers named in the log line of those left unforwarded


@dataclass
class Forward:
    guest_port: int
    host_port: int
    lan_port: int | None = None


class PortForwards:
    def __init__(self, limit: int = MAX_FORWARDED_PORTS) -> None:
        self.limit = limit
        self.forwards: dict[int, Forward] = {}
        self.overflow: set[int] = set()  # listening but not forwarded (over the limit)
        self.flooded = False  # the last poll reported more listening ports than are taken in (logged once)
        self._claim: loopback.LoopbackClaim | None = None

    @property
    def address(self) -> str | None:
        """The rig's own loopback address its forwards listen on (None before its first forward)."""
        return self._claim.address if self._claim is not None else None

    async def sync(self, handle: RigHandle, listening: list[int], reserved: frozenset[int] = frozenset()) -> list[int]:
        """Bring the forwards in line with ``listening``; returns ports newly left unforwarded (to log). A guest
        port in ``reserved`` (the server's own) is forwarded on an OS-assigned port instead of its own number."""
        now = set(listening)
        for gp in [p for p in self.forwards if p not in now]:
            await self._drop(handle, self.forwards.pop(gp))
        candidates = sorted(now - self.forwards.keys())
        slots = max(0, self.limit - len(self.forwards))
        for gp in candidates[:slots]:
            self.forwards[gp] = Forward(gp, await self._forward_loopback(handle, gp, gp not in reserved))
        extra = set(candidates[slots:])
        fresh = sorted(extra - self.overflow)
        self.overflow = extra
        if fresh:  # one line per poll, however many ports a guest opens
            shown = ", ".join(str(gp) for gp in fresh[:_LOGGED_PORTS]) + (", ..." if len(fresh) > _LOGGED_PORTS else "")
            log.warning(
                "rig %s: %d more guest ports listen but are not forwarded (limit %d): %s",
                handle.spec.rig_id,
                len(fresh),
                self.limit,
                shown,
            )
        return fresh

    async def _forward_loopback(self, handle: RigHandle, guest_port: int, own_number: bool) -> int:
        if self._claim is None:
            self._claim = loopback.claim()
        address = self._claim.address
        if own_number:
            try:
                return await handle.forward(guest_port, address, guest_port)
            except Conflict:
                pass
        return await handle.forward(guest_port, address, None)

    @staticmethod
    async def _drop(handle: RigHandle, fwd: Forward) -> None:
        for port in (fwd.host_port, fwd.lan_port):
            if port is not None:
                try:
                    await handle.unforward(port)
                except HangarError as exc:
                    log.warning("rig %s: unforward %d failed: %s", handle.spec.rig_id, port, exc.message)

    async def share_lan(self, handle: RigHandle, guest_port: int) -> Forward:
        fwd = self.forwards.get(guest_port)
        if fwd is None:
            raise InvalidArgs(
                f"guest port {guest_port} is not forwarded; only forwarded ports can be shared", field="guestPort"
            )
        if fwd.lan_port is None:
            fwd.lan_port = await handle.forward(guest_port, ALL_INTERFACES, None)
        return fwd

    async def unshare_lan(self, handle: RigHandle, guest_port: int) -> Forward:
        fwd = self.forwards.get(guest_port)
        if fwd is None:
            raise InvalidArgs(f"guest port {guest_port} is not forwarded", field="guestPort")
        if fwd.lan_port is not None:
            await handle.unforward(fwd.lan_port)
            fwd.lan_port = None
        return fwd

    async def aclose(self, handle: RigHandle) -> None:
        try:
            for fwd in list(self.forwards.values()):
                await self._drop(handle, fwd)
        finally:
            self.forwards.clear()
            self.overflow.clear()
            if self._claim is not None:
                self._claim.release()
                self._claim = None

    def rows(self) -> list[PortRow]:
        """Forwarded ports, then the rest, each by guest port."""
        rows = [
            PortRow(
                guest_port=f.guest_port,
                forwarded=True,
                host_address=self.address,
                host_port=f.host_port,
                lan_port=f.lan_port,
            )
            for f in sorted(self.forwards.values(), key=lambda f: f.guest_port)
        ]
        rows += [
            PortRow(guest_port=p, forwarded=False, host_address=None, host_port=None, lan_port=None)
            for p in sorted(self.overflow)
        ]
        return rows
