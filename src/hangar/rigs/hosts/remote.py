"""A rig on a rig host as the manager sees it: a ``RigHandle`` whose every capability is a request over the rig
host's link (``link.HostLink``), found afresh at each call, so a rig host that reconnects within its lease goes on
serving its rigs.

Proxied: exec, terminals (``open_pty``), file drops and reads (``write_file``, ``read_file``: the files lane),
parking, waking, resident memory, granting egress hosts, closing. Not proxied yet, refused with ``Unavailable``
saying so: streamed commands (``run``: the confinement of user code and browser engines, which stay on the
server's own backend), port forwards (a rig host's rig reports no listening ports), the door to the server,
dev-domain lanes and browser engines.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import TYPE_CHECKING

from hangar.core.confine import ExecResult
from hangar.errors import HangarError, Unavailable
from hangar.rigs.backends.base import RigHandle, RigSpec
from hangar.rigs.backends.capabilities import Command, Pty
from hangar.rigs.hosts import wire

if TYPE_CHECKING:
    from hangar.rigs.hosts.link import HostLink
    from hangar.rigs.hosts.registry import RigHosts


def _not_proxied(what: str) -> Unavailable:
    return Unavailable(f"{what} is not carried to rigs on rig hosts yet")


class RemoteRig(RigHandle):
    def __init__(self, hosts: RigHosts, host_id: str, host_name: str, spec: RigSpec) -> None:
        self.spec = spec
        self.host_id = host_id
        self.host_name = host_name
        self._hosts = hosts
        self._dead = asyncio.Event()
        self._death = "the rig's processes died underneath it"
        self._closed = False

    def _link(self) -> HostLink:
        if self._dead.is_set():
            raise Unavailable(f"rig {self.spec.rig_id} died: {self._death}")
        link = self._hosts.link(self.host_id)
        if link is None:
            raise Unavailable(f"rig host {self.host_name!r} is not connected; its rigs wait for it to come back")
        return link

    async def _call(self, op: str, **args: object) -> dict[str, object]:
        return await self._link().call(op, rig=self.spec.rig_id, **args)

    def died(self, detail: str) -> None:
        """The rig is gone (its host lost past the lease, or its processes died there)."""
        if not self._dead.is_set():
            self._death = detail
            self._dead.set()

    # -- lifetime --------------------------------------------------------------------------------------------

    def alive(self) -> bool:
        return not self._dead.is_set()

    async def wait_dead(self) -> None:
        await self._dead.wait()

    def death_detail(self) -> str:
        return self._death

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            if not self._dead.is_set():
                await self._call("close")
        except Unavailable:
            pass  # the host is away: it closes the rig itself when its lease with this server lapses
        finally:
            self._dead.set()
            await self._hosts.ended(self.spec.rig_id)

    # -- proxied ---------------------------------------------------------------------------------------------

    async def exec(self, command: str, *, timeout_s: float | None, stdin: bytes | None = None) -> ExecResult:
        if stdin is not None:
            raise _not_proxied("feeding a command's input")
        return wire.result_of(await self._call("exec", command=command, timeoutS=timeout_s))

    async def open_pty(self, cols: int, rows: int) -> Pty:
        return await self._link().open_pty(self.spec.rig_id, cols, rows)

    async def park(self) -> None:
        await self._call("park")

    async def wake(self) -> None:
        await self._call("wake")

    async def resident_mb(self) -> int:
        return int(str((await self._call("residentMb"))["mb"]))

    async def grant_hosts(self, hosts: Iterable[str]) -> None:
        await self._call("grantHosts", hosts=sorted(hosts))

    async def listening_ports(self) -> list[int]:
        return []  # forwards are not carried yet, so there is nothing to mirror

    # -- not proxied yet -------------------------------------------------------------------------------------

    async def run(self, command: Command, on_stdout: Callable[[bytes], Awaitable[None]] | None) -> ExecResult:
        raise _not_proxied("a streamed command")

    async def forward(self, guest_port: int, host: str, host_port: int | None) -> int:
        raise _not_proxied("a port forward")

    async def unforward(self, host_port: int) -> None:
        return None  # nothing was forwarded

    # -- files (the files lane's drops and reads) -------------------------------------------------------------

    async def write_file(self, guest_path: str, data: AsyncIterator[bytes] | bytes, *, exclusive: bool) -> None:
        link = self._link()
        opened = await link.call("fileWrite", rig=self.spec.rig_id, path=guest_path, exclusive=exclusive)
        channel = opened["channel"]
        try:
            async for chunk in _pieces(data):
                await link.call("fileChunk", channel=channel, data=base64.b64encode(chunk).decode())
        except BaseException:
            with contextlib.suppress(HangarError):
                await link.call("fileEnd", channel=channel, abandon=True)
            raise
        await link.call("fileEnd", channel=channel)

    async def read_file(self, guest_path: str) -> AsyncIterator[bytes]:
        link = self._link()
        channel = (await link.call("fileRead", rig=self.spec.rig_id, path=guest_path))["channel"]
        done = False
        try:
            while True:
                got = await link.call("fileNext", channel=channel)
                if got.get("eof"):
                    done = True
                    return
                yield base64.b64decode(str(got["data"]))
        finally:
            if not done:
                with contextlib.suppress(HangarError):
                    await link.call("fileDone", channel=channel)


async def _pieces(data: AsyncIterator[bytes] | bytes) -> AsyncIterator[bytes]:
    """``data`` in pieces of at most ``wire.FILE_CHUNK`` bytes."""
    if isinstance(data, bytes | bytearray):
        for start in range(0, len(data), wire.FILE_CHUNK):
            yield bytes(data[start : start + wire.FILE_CHUNK])
        return
    async for chunk in data:
        for start in range(0, len(chunk), wire.FILE_CHUNK):
            yield chunk[start : start + wire.FILE_CHUNK]
