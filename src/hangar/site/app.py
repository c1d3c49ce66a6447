"""The website app: ``build_site(base_url)`` renders everything once and returns a Starlette app.

Serving a published resource is a dictionary lookup in a pure ASGI layer that sits in front of Starlette's
router; the router only sees the tool server's POSTs. Unpublished paths get a real 404 whose body negotiates.
"""

from __future__ import annotations

import contextlib
import html
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from hangar.site.build import Origin, Resource, SiteBuild
from hangar.site.discovery import MCP_PATHS
from hangar.site.mcp_server import PROTOCOL_VERSIONS, DocsToolServer, origin_of
from hangar.site.negotiate import choose

log = logging.getLogger(__name__)

PAGE_OFFERS = ("text/html", "text/markdown")
NOT_FOUND_OFFERS = ("text/html", "text/markdown", "application/json")
_NOT_FOUND_TYPES = {
    "text/html": b"text/html; charset=utf-8",
    "text/markdown": b"text/markdown; charset=utf-8",
    "application/json": b"application/json",
}
_ALLOW_GET = b"GET, HEAD"


def _header(scope: Scope, name: bytes) -> str | None:
    for k, v in scope.get("headers", ()):
        if k == name:
            return str(v.decode("latin-1"))
    return None


def _escape_path(path: str, media: str) -> bytes:
    shown = path[:300]
    if media == "application/json":
        return json.dumps(shown)[1:-1].encode()
    if media == "text/html":
        return html.escape(shown).encode()
    # Markdown: the path sits in a code span; drop what could close it or start a new line.
    return "".join(c for c in shown if c not in "`\r\n").encode()


class StaticLayer:
    """Answers every GET and HEAD from the pre-rendered resources; passes the rest to the router."""

    def __init__(self, app: ASGIApp, site: SiteBuild) -> None:
        self.app = app
        self.site = site

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        method = scope["method"]
        path: str = scope["path"]
        if method not in ("GET", "HEAD"):
            if path in MCP_PATHS:
                await self.app(scope, receive, send)
            elif self._published(path):
                await self._answer(send, 405, b"", [(b"allow", _ALLOW_GET), (b"content-length", b"0")])
            else:
                await self._not_found(scope, send, path)
            return
        site = self.site.origin(origin_of(scope, self.site.base_url))
        res = self._lookup(scope, site, path)
        if res is None:
            await self._not_found(scope, send, path, site)
            return
        if_none = _header(scope, b"if-none-match")
        if if_none is not None and res.etag in (t.strip().encode() for t in if_none.split(",")):
            keep = [(k, v) for k, v in res.headers if k in (b"etag", b"vary", b"cache-control", b"link")]
            await self._answer(send, 304, b"", keep)
            return
        await self._answer(send, 200, b"" if method == "HEAD" else res.body, list(res.headers))

    def _published(self, path: str) -> bool:
        return path in self.site.templates or path == "/.well-known/agent-skills/index.json"

    def _lookup(self, scope: Scope, site: Origin, path: str) -> Resource | None:
        pair = site.pages.get(path)
        if pair is not None:
            if choose(_header(scope, b"accept"), PAGE_OFFERS) == "text/markdown":
                return pair[1]
            return pair[0]
        return site.resources.get(path)

    async def _not_found(self, scope: Scope, send: Send, path: str, site: Origin | None = None) -> None:
        site = site or self.site.origin(origin_of(scope, self.site.base_url))
        if path.startswith("/api/") or path == "/api":
            media = "application/json"
        else:
            media = choose(_header(scope, b"accept"), NOT_FOUND_OFFERS)
        head, tail = site.not_found[media]
        body = head + _escape_path(path, media) + tail
        headers = [
            (b"content-type", _NOT_FOUND_TYPES[media]),
            (b"content-length", str(len(body)).encode()),
            (b"vary", b"Accept"),
            (b"cache-control", b"no-store"),
            (b"x-content-type-options", b"nosniff"),
        ]
        await self._answer(send, 404, b"" if scope["method"] == "HEAD" else body, headers)

    @staticmethod
    async def _answer(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


class _McpEndpoint:
    """Starlette calls a plain function as a request handler; a class instance is mounted as raw ASGI."""

    def __init__(self, server: DocsToolServer) -> None:
        self.server = server

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.server.asgi(scope, receive, send)


def build_site(base_url: str | None = None) -> Starlette:
    """The website as an ASGI app. ``base_url`` fixes the origin of canonical URLs; when None, each request's
    own origin is used."""
    if base_url is not None and not base_url.startswith(("http://", "https://")):
        raise ValueError("base_url must start with http:// or https://")
    site = SiteBuild(base_url)
    tools = DocsToolServer(site)
    site.render(tools.descriptions, PROTOCOL_VERSIONS)
    if base_url:
        site.origin(base_url)  # warm the only origin now, not on the first request

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[dict[str, Any]]:
        async with tools.run():
            yield {}

    endpoint = _McpEndpoint(tools)
    routes = [Route(p, endpoint, methods=["POST"]) for p in MCP_PATHS]
    app = Starlette(routes=routes, middleware=[Middleware(StaticLayer, site=site)], lifespan=lifespan)
    app.state.site = site
    app.state.docs_tools = tools
    return app
