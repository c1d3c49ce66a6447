"""A rig on a rig host as the manager sees it: a ``RigHandle`` whose every capability is a request over the rig
host's link (``link.HostLink``), found afresh at each call, so a rig host that reconnects within its lease goes on
serving its rigs.

Proxied: exec, terminals (``open_pty``), file drops and reads (``write_file``, ``read_file``: the files lane),
parking, waking, resident memory, granting egress hosts, listening ports, connections into the rig's ports
(``connect``: a stream lane each, ``streams``) and so port forwards (``forward``: a listener on this server's host,
on the rig's own loopback address as for a rig of its own, relaying each connection over a stream lane), closing.
Not proxied yet, refused with ``Unavailable`` saying so: streamed commands (``run``: the confinement of user code
and browser engines, which stay on the server's own backend), the door to the server, dev-domain lanes on the
rig's own loopback and browser engines.
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
from hangar.rigs.backends.enclosure.forwards import Forwards
from hangar.rigs.hosts import wire
from hangar.rigs.hosts.streams import Streams
from hangar.rigs.model import listening_within

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
        self._forwards = Forwards(self.connect)

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
            await self._forwards.aclose()
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
        mb = (await self._call("residentMb")).get("mb")
        if type(mb) is not int or mb < 0:
            raise wire.answered_wrongly("residentMb", "a size that is not a count")
        return mb

    async def grant_hosts(self, hosts: Iterable[str]) -> None:
        await self._call("grantHosts", hosts=sorted(hosts))

    async def listening_ports(self) -> list[int]:
        # The rig host's word only: what is not a port number is dropped and a flood is cut (the manager cuts it
        # again, logging once, for every backend).
        ports, _ = listening_within((await self._call("listeningPorts")).get("ports"))
        return ports

    async def connect(self, guest_port: int) -> Streams:
        return await self._link().open_stream(self.spec.rig_id, guest_port)

    async def forward(self, guest_port: int, host: str, host_port: int | None) -> int:
        self._link()  # a rig that died or whose host is away gets no listener
        return await self._forwards.add(guest_port, host, host_port)

    async def unforward(self, host_port: int) -> None:
        await self._forwards.remove(host_port)

    # -- not proxied yet -------------------------------------------------------------------------------------

    async def run(self, command: Command, on_stdout: Callable[[bytes], Awaitable[None]] | None) -> ExecResult:
        raise _not_proxied("a streamed command")

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
                try:
                    yield base64.b64decode(str(got.get("data")), validate=True)
                except ValueError as exc:
                    raise wire.answered_wrongly("fileNext", "data that is not base64") from exc
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
