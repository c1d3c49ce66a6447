"""The ``/mcp`` endpoint as the server mounts it: ``McpDoor`` built and started on the first request, not at start.

The door stands on the MCP SDK, whose import is most of a second; most server starts (every command-line test,
every restart) never see an MCP client. So the server mounts this stand-in, which loads the SDK, builds the door
and starts its session managers the first time a request reaches ``/mcp`` (or someone asks for the door), then
hands every request to it. The door runs in a task this endpoint holds for as long as the server runs, so it is
started and stopped in one task, as its session managers require.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING

import anyio
import anyio.abc
from starlette.types import Receive, Scope, Send

from hangar.rpc.authority import Authority
from hangar.rpc.dispatcher import Dispatcher
from hangar.rpc.mcp.limits import SeatLimits
from hangar.rpc.mcp.wire import answer, preflight, with_cors
from hangar.rpc.registry import OpRegistry

if TYPE_CHECKING:
    from hangar.rpc.mcp.door import McpDoor


class DeferredDoor:
    """The ``/mcp`` ASGI endpoint; ``door()`` gives the ``McpDoor`` behind it, building and starting it when it is
    not yet."""

    def __init__(self, registry: OpRegistry, origin: Callable[[], str], limits: SeatLimits) -> None:
        self.registry = registry
        self.origin = origin
        self.limits = limits
        self._door: McpDoor | None = None
        self._building = anyio.Lock()
        self._tasks: anyio.abc.TaskGroup | None = None
        self._bound: tuple[Dispatcher, Authority] | None = None
        self._stopping = anyio.Event()

    @contextlib.asynccontextmanager
    async def run(self, dispatcher: Dispatcher, authority: Authority) -> AsyncIterator[None]:
        """While the server runs: the door may start. On the way out, a started door stops (its sessions end)."""
        self._bound = (dispatcher, authority)
        async with anyio.create_task_group() as tasks:
            self._tasks = tasks
            try:
                yield
            finally:
                self._tasks = None
                self._stopping.set()

    async def door(self) -> McpDoor:
        """The door, started; RuntimeError when the server is not running."""
        if self._door is not None:
            return self._door
        async with self._building:
            if self._door is None:
                tasks, bound = self._tasks, self._bound
                if tasks is None or bound is None:
                    raise RuntimeError("the MCP endpoint is not running")
                # In a worker thread: the requests already in flight go on being served while the SDK loads.
                await anyio.to_thread.run_sync(importlib.import_module, "hangar.rpc.mcp.door")
                from hangar.rpc.mcp.door import McpDoor

                door = McpDoor(self.registry, self.origin, self.limits)
                await tasks.start(self._serve, door, bound)
                self._door = door
        return self._door

    async def _serve(
        self, door: McpDoor, bound: tuple[Dispatcher, Authority], *, task_status: anyio.abc.TaskStatus[None]
    ) -> None:
        async with door.run(*bound):
            task_status.started()
            await self._stopping.wait()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._door is not None:
            await self._door(scope, receive, send)
            return
        # Answered as the door answers them, without loading it: a preflight, and a server not (or no longer) up.
        if scope["method"] == "OPTIONS":
            await preflight(with_cors(send))
            return
        if self._tasks is None:
            await answer(with_cors(send), 503, {"error": "the server is starting"}, [])
            return
        door = await self.door()
        await door(scope, receive, send)
