"""Serving the website on a loopback port for the site's integration tests.

The site runs in its own thread with its own event loop, so synchronous clients (httpx, schemathesis,
Chromium) and async tests with their own loops can all talk to it.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass

from hangar.cli.website import build_site
from hangar.config import Settings
from hangar.server.connections import ConnectionGuard, ConnectionLimits
from hangar.server.listeners import Listener


@dataclass
class RunningSite:
    url: str
    port: int


@contextlib.contextmanager
def serve_site(base_url: str | None = None) -> Iterator[RunningSite]:
    app = build_site(base_url)
    # The listener ``hangar site`` runs (its protocols and connection caps).
    server = Listener(
        "website", app, "127.0.0.1", 0, ConnectionGuard(ConnectionLimits.from_settings(Settings()))
    ).make()
    thread = threading.Thread(target=lambda: asyncio.run(server.serve()), daemon=True)
    thread.start()
    for _ in range(1000):
        if server.started or not thread.is_alive():
            break
        threading.Event().wait(0.01)
    if not server.started:
        raise RuntimeError("the site did not start")
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield RunningSite(url=f"http://127.0.0.1:{port}", port=port)
    finally:
        server.should_exit = True
        thread.join(timeout=10)
