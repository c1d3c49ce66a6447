"""A server for ``bench_metrics.py``: the real server on a free loopback port, whose counting ``SIGUSR1`` turns
on and off while it runs, so one process (same memory, same core, same caches) is measured both ways.

Run by ``bench_metrics.py``: ``python bench/metrics_server.py DATA_DIR``; prints ``server: <origin>``.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path

from hangar.config import Settings
from hangar.core.context import AppContext
from hangar.server.app import build_server
from hangar.server.connections import ConnectionGuard, ConnectionLimits
from hangar.server.listeners import Listener


async def main(data_dir: Path) -> None:
    settings = Settings(data_dir=data_dir, host="127.0.0.1", port=0)
    ready: list[AppContext] = []
    app = build_server(settings, on_ready=ready)
    server = Listener("server", app, "127.0.0.1", 0, ConnectionGuard(ConnectionLimits.from_settings(settings))).make()
    task = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.01)
    settings.port = server.servers[0].sockets[0].getsockname()[1]
    metrics = ready[0].metrics

    def toggle() -> None:
        metrics.enabled = not metrics.enabled

    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGUSR1, toggle)
    loop.add_signal_handler(signal.SIGTERM, lambda: setattr(server, "should_exit", True))
    print(f"server: http://127.0.0.1:{settings.port}", flush=True)
    await task


if __name__ == "__main__":
    import uvloop

    uvloop.run(main(Path(sys.argv[1])))
