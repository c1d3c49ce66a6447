"""The web client on the server's listener (CONTRACTS.md section 9).

``web/dist`` (built by ``npm run build`` in ``web/``; ``make run`` and ``make test`` build it) holds ``index.html``,
the app shell, and ``assets/`` with content-hashed names. Every GET of a path that is not reserved answers the shell,
so a deep link loads the app, which then reads the path; the reserved paths keep their own routes, and a path under
a reserved prefix that no route answers stays a 404 (a missing asset too). Assets are cached for a year (a new build
has new names) and sent gzipped to a browser that accepts it (compressed once, then kept in memory); the shell is
revalidated on every load, under a Content-Security-Policy that admits scripts and styles from this origin only and
sockets to this server.

When the client is not built (a developer who ran the server from a fresh checkout), the shell's paths answer the
server's landing page, which says how to build it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import anyio.to_thread
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, Response
from starlette.routing import BaseRoute, Match, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import Scope

from hangar.config import Settings
from hangar.server.compressed import GzipCache, accepts_gzip, is_compressible
from hangar.server.landing import landing_response

RESERVED_EXACT: frozenset[str] = frozenset({"/rpc", "/mcp", "/healthz", "/readyz", "/metrics"})
RESERVED_PREFIXES: tuple[str, ...] = (
    "/auth/",
    "/saml/",
    "/oidc/",
    "/scim/",
    "/rig/",
    "/open/",
    "/.well-known/",
    "/assets/",
    "/workspace-transfer/",
    "/forge/",
    "/meeting-audio/",
)

IMMUTABLE = "public, max-age=31536000, immutable"
_HOST = re.compile(r"^[A-Za-z0-9.\-]+(:[0-9]{1,5})?$|^\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?$")


def is_reserved(path: str) -> bool:
    return path in RESERVED_EXACT or path.startswith(RESERVED_PREFIXES) or path.rstrip("/") in RESERVED_EXACT


def default_dist() -> Path:
    """``web/dist`` of the checkout this package runs from (``make install`` installs it in place)."""
    return Path(__file__).resolve().parents[3] / "web" / "dist"


def _ws_origin(origin: str) -> str:
    return "wss" + origin.removeprefix("https") if origin.startswith("https") else "ws" + origin.removeprefix("http")


def content_security_policy(settings: Settings, request: Request) -> str:
    """Scripts, styles, images, fonts and media from this origin only (media also from blobs the page made);
    sockets to this server, by the origin the page was loaded from and by its public URL when one is set
    (``connect-src 'self'`` does not cover ``ws:`` in every browser)."""
    sockets = {_ws_origin(settings.public_url)} if settings.public_url else set()
    host = request.headers.get("host", "")
    if _HOST.match(host):
        sockets.add(f"{'wss' if request.url.scheme == 'https' else 'ws'}://{host}")
    return "; ".join(
        [
            "default-src 'none'",
            "script-src 'self'",
            "style-src 'self'",
            "img-src 'self'",
            "font-src 'self'",
            "manifest-src 'self'",
            # A meeting's recording is fetched with the credential and played from a blob this page made.
            "media-src 'self' blob:",
            f"connect-src 'self' {' '.join(sorted(sockets))}",
            "base-uri 'none'",
            "form-action 'self'",
            "frame-ancestors 'none'",
        ]
    )


class ImmutableAssets(StaticFiles):
    """``web/dist/assets``: content-hashed names, so a year's cache; never sniffed as another type; text formats
    gzipped when the request accepts it (``Vary: Accept-Encoding`` either way, so a shared cache keeps both). The
    folder may appear after the server started (a build), or never: a missing one is a 404, not a configuration
    error."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.gzipped = GzipCache()

    async def check_config(self) -> None:
        """Starlette refuses a missing folder at the first request; here each request looks (and 404s)."""

    def file_response(self, *args: object, **kwargs: object) -> Response:
        response = super().file_response(*args, **kwargs)  # type: ignore[arg-type]
        response.headers["Cache-Control"] = IMMUTABLE
        response.headers["X-Content-Type-Options"] = "nosniff"
        return response

    async def get_response(self, path: str, scope: Scope) -> Response:
        response = await super().get_response(path, scope)
        if not isinstance(response, FileResponse) or response.stat_result is None:
            return response
        if not is_compressible(response.path, response.stat_result.st_size):
            return response
        response.headers["Vary"] = "Accept-Encoding"
        request = Headers(scope=scope)
        if (
            scope["method"] != "GET"
            or response.status_code != 200
            or not accepts_gzip(request.get("accept-encoding", ""))
        ):
            return response
        headers = {k: v for k, v in response.headers.items() if k not in ("content-length", "etag")}
        # The compressed body is another representation: its own validator, so caches never mix the two.
        etag = response.headers.get("etag", "").removesuffix('"') + '-gzip"' if "etag" in response.headers else None
        if etag:
            headers["etag"] = etag
            if etag in [t.strip() for t in request.get("if-none-match", "").split(",")]:
                return Response(status_code=304, headers={k: v for k, v in headers.items() if k != "content-type"})
        body = await anyio.to_thread.run_sync(self.gzipped.body, response.path, response.stat_result)
        return Response(body, headers={**headers, "Content-Encoding": "gzip"})


@dataclass
class WebClient:
    """The built client in ``dist``, read again when ``index.html`` changes (a rebuild while the server runs)."""

    dist: Path
    _shell: tuple[float, bytes] | None = field(default=None, repr=False)

    def shell(self) -> bytes | None:
        index = self.dist / "index.html"
        try:
            mtime = index.stat().st_mtime
            if self._shell is None or self._shell[0] != mtime:
                self._shell = (mtime, index.read_bytes())
        except OSError:
            self._shell = None
            return None
        return self._shell[1]

    async def serve_shell(self, request: Request) -> Response:
        body = self.shell()
        if body is None:
            return landing_response(request)
        settings: Settings = request.app.state.ctx.settings
        return HTMLResponse(
            body,
            headers={
                "Content-Security-Policy": content_security_policy(settings, request),
                "Cache-Control": "no-cache",
                "X-Content-Type-Options": "nosniff",
                "Referrer-Policy": "no-referrer",
            },
        )


class ShellRoute(Route):
    """Every GET whose path is not reserved. A reserved path never matches, so it keeps the answer its own route
    (or the router's 404 and 405) gives, whatever the order of the routes."""

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if scope["type"] == "http" and is_reserved(scope["path"]):
            return Match.NONE, {}
        return super().matches(scope)


def web_client_routes(dist: Path) -> list[BaseRoute]:
    """The assets and the shell; mounted last, after every part's routes."""
    client = WebClient(dist)
    return [
        Mount("/assets", app=ImmutableAssets(directory=dist / "assets", check_dir=False), name="assets"),
        ShellRoute("/{path:path}", client.serve_shell, methods=["GET"]),
    ]
