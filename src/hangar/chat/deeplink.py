"""The deep-link route: ``GET /open/workspaces/<workspaceId>/(spaces|tickets)/<id>``.

Links the bot posts in chat point here (an ``https`` address chat clients make clickable); the page hands over to
the installed app at ``hangar://workspaces/...`` and shows a button for when the browser does not follow on its
own. The route is public and inert: it checks the ids' shape (1 to 128 of ``[A-Za-z0-9_.-]``, else 404) and reads
no database, so it tells nobody whether a workspace, space or ticket exists; the opened app authorizes.

The page runs no script: a ``<meta http-equiv="refresh">`` navigates, so the policy stays ``default-src 'none'``.
"""

from __future__ import annotations

import html
import re

from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import Route

from hangar.config import Settings

APP_SCHEME = "hangar"
KINDS = ("spaces", "tickets")
OPEN_PATH = "/open/workspaces/{workspace_id}/{kind}/{item_id}"
_ID = re.compile(r"[A-Za-z0-9_.-]{1,128}")

CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
_HEADERS = {
    "Content-Security-Policy": CSP,
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}

_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="refresh" content="0;url={target}">
<title>Opening Hangar</title>
<style>body{{font:16px/1.5 system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem;color:#1b1f24}}
a.button{{display:inline-block;padding:.5rem 1.1rem;border:1px solid #8a96a3;border-radius:4px;color:inherit;
text-decoration:none}}</style>
</head><body>
<h1>Opening Hangar</h1>
<p>This {what} opens in the Hangar app. If nothing happens, open it here:</p>
<p><a class="button" id="open" href="{target}">Open in Hangar</a></p>
</body></html>
"""


def app_target(workspace_id: str, kind: str, item_id: str) -> str:
    return f"{APP_SCHEME}://workspaces/{workspace_id}/{kind}/{item_id}"


def http_origin(origin: str) -> str:
    """The web origin of a server address: ``ws`` becomes ``http``, ``wss`` becomes ``https``; loopback is kept."""
    for socket_scheme, web_scheme in (("wss://", "https://"), ("ws://", "http://")):
        if origin.startswith(socket_scheme):
            return web_scheme + origin.removeprefix(socket_scheme)
    return origin.rstrip("/")


def public_open_url(settings: Settings, workspace_id: str, kind: str, item_id: str) -> str | None:
    """The deep link to post in chat, or ``None`` when the server has no public URL (nothing reachable to link)."""
    if settings.public_url is None or kind not in KINDS:
        return None
    return f"{http_origin(settings.public_url)}/open/workspaces/{workspace_id}/{kind}/{item_id}"


async def not_found(_request: Request) -> Response:
    """Anything else under ``/open/`` (extra segments, another kind) is 404 too, not the web client's page."""
    return _not_found()


def _not_found() -> Response:
    return PlainTextResponse("Not found", status_code=404, headers={"Cache-Control": "no-store"})


async def open_page(request: Request) -> Response:
    ws = request.path_params["workspace_id"]
    kind = request.path_params["kind"]
    item_id = request.path_params["item_id"]
    if kind not in KINDS or not _ID.fullmatch(ws) or not _ID.fullmatch(item_id):
        return _not_found()
    target = html.escape(app_target(ws, kind, item_id), quote=True)
    what = "space" if kind == "spaces" else "ticket"
    return HTMLResponse(_PAGE.format(target=target, what=what), headers=_HEADERS)


ROUTES = [Route(OPEN_PATH, open_page, methods=["GET"]), Route("/open/{rest:path}", not_found, methods=["GET"])]
