"""A TCP load balancer in front of several ``hangar serve`` processes, as a team runs one in front of its servers.

Each new connection goes to the next server in turn; a server that refuses the connection (it was killed) is
skipped, so a client that reconnects after losing its server lands on a live one. Bytes are copied both ways
untouched (the WebSocket upgrade and its frames included). Runs on the test's own event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from urllib.parse import urlsplit


class Balancer:
    def __init__(self, server_urls: list[str]) -> None:
        self._backends = [(urlsplit(u).hostname or "127.0.0.1", urlsplit(u).port or 80) for u in server_urls]
        self._next = 0
        self._server: asyncio.Server | None = None
        self._pipes: set[asyncio.Task[None]] = set()
        self.port = 0

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/rpc"

    async def _dial(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        for _ in range(len(self._backends)):
            host, port = self._backends[self._next % len(self._backends)]
            self._next += 1
            try:
                return await asyncio.open_connection(host, port)
            except OSError:
                continue
        raise ConnectionRefusedError("no server behind the balancer accepts connections")

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await self._dial()
        except OSError:
            writer.close()
            return
        await asyncio.gather(self._copy(reader, up_writer), self._copy(up_reader, writer))

    async def _copy(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            with contextlib.suppress(OSError, RuntimeError):
                writer.close()

    def _track(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.ensure_future(self._serve(reader, writer))
        self._pipes.add(task)
        task.add_done_callback(self._pipes.discard)

    async def __aenter__(self) -> Balancer:
        self._server = await asyncio.start_server(self._track, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._pipes):
            task.cancel()
        await asyncio.gather(*self._pipes, return_exceptions=True)


@contextlib.asynccontextmanager
async def balancer(server_urls: list[str]) -> AsyncIterator[Balancer]:
    async with Balancer(server_urls) as b:
        yield b
