"""A peer's uvicorn server (a fake provider) run in the test's own event loop."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import uvicorn


@contextlib.asynccontextmanager
async def serving(config: uvicorn.Config) -> AsyncIterator[int]:
    """Serve ``config`` until the block ends; yields the port it listens on (the real one when it asked for 0). A
    server that fails to start raises here; the loop's signals stay the test runner's."""
    server = uvicorn.Server(config)
    server.capture_signals = contextlib.nullcontext  # type: ignore[method-assign,assignment]
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.01)
    try:
        yield server.servers[0].sockets[0].getsockname()[1]
    finally:
        server.should_exit = True
        server.force_exit = True
        await asyncio.wait_for(task, 10)
