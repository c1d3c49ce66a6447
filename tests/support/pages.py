"""A test web server for browser tests: the HTML files in ``tests/support/pages/`` by name, plus
``/status/<code>`` (a page answered with that HTTP status) and ``/echo?...`` (the query string as a page).

It listens on every address of this machine so a page can be loaded from loopback (a secure context) or from
this machine's outward address (a plain-http, insecure context), and, through a rig's egress gate, under any
name the gate maps to it.
"""

from __future__ import annotations

import contextlib
import html
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from aiohttp import web

PAGES = Path(__file__).parent / "pages"


def outward_address() -> str:
    """This machine's address on its default route (not loopback), for pages that must be insecure contexts."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.connect(("192.0.2.1", 9))  # no packet is sent: connecting a UDP socket only picks the route
        return str(sock.getsockname()[0])


@dataclass(frozen=True)
class PageServer:
    port: int

    def url(self, path: str = "/", host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"


async def _page(request: web.Request) -> web.StreamResponse:
    name = request.match_info["name"]
    path = PAGES / name
    if "/" in name or not path.is_file():
        raise web.HTTPNotFound(text=f"no test page {name}")
    return web.FileResponse(path, headers={"Cache-Control": "no-store"})


async def _status(request: web.Request) -> web.Response:
    code = int(request.match_info["code"])
    body = f"<!doctype html><title>status {code}</title><h1>status {code}</h1>"
    return web.Response(status=code, text=body, content_type="text/html")


async def _echo(request: web.Request) -> web.Response:
    text = html.escape(request.query_string)
    return web.Response(text=f"<!doctype html><title>echo</title><pre id='q'>{text}</pre>", content_type="text/html")


@contextlib.asynccontextmanager
async def page_server() -> AsyncIterator[PageServer]:
    app = web.Application()
    app.router.add_get("/status/{code:\\d{3}}", _status)
    app.router.add_get("/echo", _echo)
    app.router.add_get("/{name}", _page)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "0.0.0.0", 0)
    await site.start()
    server = site._server
    assert server is not None
    port = int(server.sockets[0].getsockname()[1])  # type: ignore[union-attr]
    try:
        yield PageServer(port)
    finally:
        await runner.cleanup()
