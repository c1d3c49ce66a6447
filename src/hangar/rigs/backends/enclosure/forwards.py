"""Port forwards: a host listener per forward relaying each connection to a guest port inside the rig (reached by
the rig's ``connect``: into its network namespace here, over the rig host's link for a rig on a rig host).

A listener binds a rig's own loopback address (``hangar.rigs.loopback``) on a port of the caller's choosing, or
``127.0.0.1`` and every interface on an OS-assigned port only: a fixed port there is what another program of the
host may be about to listen on, and its clients would reach the rig instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
from collections.abc import Awaitable, Callable

from hangar.errors import Conflict, HangarError, InvalidArgs
from hangar.rigs.egress.relay import relay
from hangar.rigs.loopback import is_rig_address

SHARED_HOSTS = ("127.0.0.1", "0.0.0.0")  # the host's loopback, or every interface when shared on the local network
# Connections one forward relays at once (each holds two descriptors of the server process; a forward shared on
# the local network takes them from anyone there): past it a new one is closed at once.
MAX_CONNECTIONS = 128

Connect = Callable[[int], Awaitable[tuple[asyncio.StreamReader, asyncio.StreamWriter]]]
"""A connection to a guest port of the rig."""


class Forwards:
    def __init__(self, connect: Connect) -> None:
        self._connect = connect
        self._servers: dict[int, asyncio.AbstractServer] = {}
        self._relays: dict[int, set[asyncio.Task[None]]] = {}

    def ports(self) -> dict[int, int]:
        return {port: port for port in self._servers}

    async def add(self, guest_port: int, host: str, host_port: int | None) -> int:
        if not 1 <= guest_port <= 65535:
            raise InvalidArgs("guest_port must be between 1 and 65535", field="guest_port")
        if host not in SHARED_HOSTS and not is_rig_address(host):
            raise InvalidArgs(f"host must be a rig's own loopback address or one of {', '.join(SHARED_HOSTS)}",
                              field="host")  # fmt: skip
        if host_port is not None and not 1 <= host_port <= 65535:
            raise InvalidArgs("host_port must be between 1 and 65535", field="host_port")
        if host_port is not None and host in SHARED_HOSTS:
            raise InvalidArgs(f"a forward on {host} takes an OS-assigned port (host_port None)", field="host_port")
        relays: set[asyncio.Task[None]] = set()

        async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            if len(relays) >= MAX_CONNECTIONS:
                writer.close()
                return
            task = asyncio.current_task()
            assert task is not None
            relays.add(task)
            try:
                guest = await self._connect(guest_port)
                await relay((reader, writer), guest)
            except (OSError, HangarError):
                writer.close()
            except asyncio.CancelledError:
                # Ended by ``remove``. Finishing normally instead of cancelled: the stream server's done callback
                # of Python 3.11 asks a cancelled handler for its exception and logs the CancelledError.
                writer.close()
            finally:
                relays.discard(task)

        try:
            server = await asyncio.start_server(on_connect, host, host_port or 0, reuse_address=True)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise Conflict(f"host port {host}:{host_port} is already in use") from exc
            raise
        bound = int(server.sockets[0].getsockname()[1])
        self._servers[bound] = server
        self._relays[bound] = relays
        return bound

    async def remove(self, host_port: int) -> None:
        server = self._servers.pop(host_port, None)
        if server is None:
            return
        server.close()
        for task in list(self._relays.pop(host_port, ())):
            task.cancel()
        with contextlib.suppress(Exception):
            await server.wait_closed()

    async def aclose(self) -> None:
        for port in list(self._servers):
            await self.remove(port)
