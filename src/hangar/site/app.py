"""The website app: ``website_app(base_url, sources)`` renders everything once and returns a Starlette app.

Serving a published resource is a dictionary lookup done before Starlette's machinery is entered (``SiteApp``
handles GET and HEAD itself); only the tool server's POSTs and the lifespan go through Starlette. Unpublished
paths get a real 404 whose body negotiates.
"""

from __future__ import annotations

import contextlib
import html
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

from starlette.applications import Starlette
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from hangar.site.build import Origin, SiteBuild
from hangar.site.discovery import MCP_PATHS
from hangar.site.mcp_server import PROTOCOL_VERSIONS, DocsToolServer, origin_of
from hangar.site.negotiate import choose
from hangar.site.reference import Sources

log = logging.getLogger(__name__)

PAGE_OFFERS = ("text/html", "text/markdown")
NOT_FOUND_OFFERS = ("text/html", "text/markdown", "application/json")
_NOT_FOUND_TYPES = {
    "text/html": b"text/html; charset=utf-8",
    "text/markdown": b"text/markdown; charset=utf-8",
    "application/json": b"application/json",
}
_NOT_MODIFIED_KEEP = (b"etag", b"vary", b"cache-control", b"link")
MAX_HOSTS = 64
# An answer: status, headers (content-length among them unless the status has no body), body (empty for HEAD).
Answer = tuple[int, tuple[tuple[bytes, bytes], ...], bytes]


def _escape_path(path: str, media: str) -> bytes:
    shown = path[:300]
    if media == "application/json":
        return json.dumps(shown)[1:-1].encode()
    if media == "text/html":
        return html.escape(shown).encode()
    # Markdown: the path sits in a code span; drop what could close it or start a new line.
    return "".join(c for c in shown if c not in "`\r\n").encode()


class SiteApp(Starlette):
    """Starlette, with GET and HEAD answered from the pre-rendered resources before any routing."""

    site: SiteBuild

    def bind(self, site: SiteBuild) -> None:
        self.site = site
        # (scheme, Host header) -> the resources of that origin; bounded, since any Host can be sent.
        self._hosts: dict[tuple[str, bytes | None], Origin] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            method = scope["method"]
            if method == "GET" or method == "HEAD":
                await self._serve(scope, send, method)
                return
            path = scope["path"]
            if path not in MCP_PATHS:
                if self.site.published(path):
                    await _answer(send, 405, b"", [(b"allow", b"GET, HEAD"), (b"content-length", b"0")])
                else:
                    accept = _find(scope, b"accept")
                    status, headers, body = self._not_found(
                        scope, path, self._origin(scope, _find(scope, b"host")), accept
                    )
                    await _answer(send, status, body, list(headers))
                return
        await super().__call__(scope, receive, send)

    def _origin(self, scope: Scope, host: bytes | None) -> Origin:
        key = (scope.get("scheme", "http"), host)
        found = self._hosts.get(key)
        if found is None:
            found = self.site.origin(origin_of(scope, self.site.base_url))
            if len(self._hosts) < MAX_HOSTS:
                self._hosts[key] = found
        return found

    async def _serve(self, scope: Scope, send: Send, method: str) -> None:
        status, headers, body = self.answer_get(scope)
        await _answer(send, status, body, list(headers))

    def answer_get(self, scope: Scope) -> Answer:
        """The whole answer to a GET or HEAD (``scope``'s method), worked out without waiting on anything: the
        listener calls this directly for the site's GETs (``hangar.server.protocols``), the ASGI path awaits
        nothing else either."""
        host = accept = if_none = None
        for k, v in scope["headers"]:
            if k == b"host":
                host = v
            elif k == b"accept":
                accept = v
            elif k == b"if-none-match":
                if_none = v
        site = self._origin(scope, host)
        path: str = scope["path"]
        pair = site.page(path)
        if pair is not None:
            wanted = choose(accept.decode("latin-1"), PAGE_OFFERS) if accept else "text/html"
            res = pair[1] if wanted == "text/markdown" else pair[0]
        else:
            found = site.resource(path)
            if found is None:
                return self._not_found(scope, path, site, accept)
            res = found
        if if_none is not None and res.etag in (t.strip() for t in if_none.split(b",")):
            return 304, tuple((k, v) for k, v in res.headers if k in _NOT_MODIFIED_KEEP), b""
        return 200, res.headers, b"" if scope["method"] == "HEAD" else res.body

    def _not_found(self, scope: Scope, path: str, site: Origin, accept: bytes | None) -> Answer:
        if path.startswith("/api/") or path == "/api":
            media = "application/json"
        else:
            media = choose(accept.decode("latin-1") if accept else None, NOT_FOUND_OFFERS)
        head, tail = site.not_found(media)
        body = head + _escape_path(path, media) + tail
        headers = (
            (b"content-type", _NOT_FOUND_TYPES[media]),
            (b"content-length", str(len(body)).encode()),
            (b"vary", b"Accept"),
            (b"cache-control", b"no-store"),
            (b"x-content-type-options", b"nosniff"),
        )
        return 404, headers, b"" if scope["method"] == "HEAD" else body


def _find(scope: Scope, name: bytes) -> bytes | None:
    for k, v in scope["headers"]:
        if k == name:
            return bytes(v)
    return None


async def _answer(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class _McpEndpoint:
    """Starlette calls a plain function as a request handler; a class instance is mounted as raw ASGI."""

    def __init__(self, server: DocsToolServer) -> None:
        self.server = server

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.server.asgi(scope, receive, send)


def website_app(base_url: str | None = None, sources: Sources | None = None) -> Starlette:
    """The website as an ASGI app. ``base_url`` fixes the origin of canonical URLs; when None, each request's
    own origin is used. ``sources``: what the generated reference pages document (``hangar.cli.website``)."""
    if base_url is not None and not base_url.startswith(("http://", "https://")):
        raise ValueError("base_url must start with http:// or https://")
    site = SiteBuild(base_url, sources)
    tools = DocsToolServer(site)
    site.render(tools.descriptions, PROTOCOL_VERSIONS)
    if base_url:
        site.origin(base_url).warm()  # the only origin: every response's bytes and ETag exist before serving

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[dict[str, Any]]:
        async with tools.run():
            yield {}

    endpoint = _McpEndpoint(tools)
    app = SiteApp(routes=[Route(p, endpoint, methods=["POST"]) for p in MCP_PATHS], lifespan=lifespan)
    app.bind(site)
    app.state.site = site
    app.state.docs_tools = tools
    return app
