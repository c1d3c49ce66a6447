"""Handing the device credential to the client after an SSO login, and the failure pages (CONTRACTS §4).

Success answers ``303 Location: <target>#token=<credential>``; the credential travels in the fragment so it
never reaches a server log or a ``Referer``. The target is, in order:

1. the ``--web-client-url`` origin when set (whatever the relay);
2. ``hangar://auth/complete`` for ``relay=desktop``;
3. ``/auth/popup-complete`` for ``relay=web-popup``: a page that posts the credential to the tab that opened it
   with ``postMessage``, to the ``client_origin`` declared at login only when the allow-list trusts it (else to
   the server's own origin);
4. same-origin ``/auth/complete`` when no relay was given.

``relay=oauth`` is not a hand-off to a client: the sign-in continues a flow of this server (the OAuth
authorization server's sign-in page, named by ``continuation``) and no credential is made; see
``hangar.sso.continuation``.

The origin allow-list (``trusted_origins``) holds only origins the configuration names: the web client URL, the
public URL, the server's own listener (on a loopback host, as ``localhost``, ``127.0.0.1`` and ``[::1]`` alike, on
its own port), and the ``--trusted-origin`` list (a web client in development on a port of its own). Neither
another loopback port (a rig's forwarded port serves whatever the rig runs) nor the origin a request arrived on
(its ``Host`` is the client's to choose, or a rebinding domain's) is trusted.

Failure answers 400: ``{"error": {"code", "message"}}`` when the client accepts ``application/json``, otherwise an
HTML page that shows the same code. Codes are the stable SAML and OIDC codes of CONTRACTS §4 (``hangar.sso.errors``).
"""

from __future__ import annotations

import html
import json
import re
import secrets
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from hangar.config import Settings
from hangar.core.http_errors import error_response
from hangar.errors import InvalidArgs
from hangar.sso.errors import SsoError

OAUTH_RELAY = "oauth"
RELAYS: tuple[str, ...] = ("desktop", "web-popup", OAUTH_RELAY)
# What a continuation may look like: the flow's own opaque id, never a URL or a path.
CONTINUATION = re.compile(r"[A-Za-z0-9_-]{16,128}")
DESKTOP_TARGET = "hangar://auth/complete"
POPUP_PATH = "/auth/popup-complete"
COMPLETE_PATH = "/auth/complete"
POPUP_MESSAGE_TYPE = "hangar:sso"

LOOPBACK_HOSTS: frozenset[str] = frozenset({"localhost", "127.0.0.1", "::1"})


def origin_of(url: str | None) -> str | None:
    """``scheme://host[:port]`` of an absolute http(s) URL, lower-cased, default ports dropped; else None."""
    if not url:
        return None
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if scheme not in ("http", "https") or not host or parts.username or parts.password:
        return None
    shown_host = f"[{host}]" if ":" in host else host
    if port is None or (scheme, port) in (("http", 80), ("https", 443)):
        return f"{scheme}://{shown_host}"
    return f"{scheme}://{shown_host}:{port}"


def _listener_origins(settings: Settings) -> set[str | None]:
    """The server's own listener as a browser may name it (every loopback name when it listens on loopback)."""
    host = settings.host.lower().strip("[]")
    hosts = LOOPBACK_HOSTS if host in LOOPBACK_HOSTS else {host}
    return {origin_of(f"http://{f'[{h}]' if ':' in h else h}:{settings.port}") for h in hosts}


def trusted_origins(settings: Settings) -> set[str]:
    """Origins a ``client_origin`` may name: the ones the configuration names, and no other."""
    found = {
        origin_of(settings.web_client_url),
        origin_of(settings.public_url),
        *_listener_origins(settings),
        *(origin_of(o) for o in settings.trusted_origins),
    }
    return {o for o in found if o}


def is_trusted_origin(origin: str | None, settings: Settings) -> bool:
    norm = origin_of(origin)
    return norm is not None and norm in trusted_origins(settings)


def request_origin(request: Request) -> str:
    return f"{request.url.scheme}://{request.url.netloc}"


@dataclass(frozen=True)
class LoginIntent:
    """What the client asked for at ``/saml/login`` or ``/oidc/login``; kept with the pending request."""

    relay: str | None = None
    client_origin: str | None = None
    continuation: str | None = None  # relay=oauth: the flow of this server the sign-in continues

    @classmethod
    def from_request(cls, request: Request) -> LoginIntent:
        """Read ``relay``, ``client_origin`` and ``continuation``; an unknown relay or a malformed continuation
        is refused, an untrusted origin dropped."""
        relay = request.query_params.get("relay") or None
        if relay is not None and relay not in RELAYS:
            raise InvalidArgs(f"relay must be desktop, web-popup or oauth, not {relay!r}", field="relay")
        continuation = None
        if relay == OAUTH_RELAY:
            continuation = request.query_params.get("continuation") or ""
            if not CONTINUATION.fullmatch(continuation):
                raise InvalidArgs("relay=oauth needs the continuation of the sign-in page", field="continuation")
        raw_origin = request.query_params.get("client_origin")
        settings: Settings = request.app.state.ctx.settings
        client_origin = None
        if relay == "web-popup" and is_trusted_origin(raw_origin, settings):
            client_origin = origin_of(raw_origin)
        return cls(relay=relay, client_origin=client_origin, continuation=continuation)

    def to_dict(self) -> dict[str, Any]:
        return {"relay": self.relay, "client_origin": self.client_origin, "continuation": self.continuation}

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> LoginIntent:
        return cls.restore(**(data or {}))

    @classmethod
    def restore(cls, relay: Any = None, client_origin: Any = None, continuation: Any = None, **_: Any) -> LoginIntent:
        """An intent as stored with a pending sign-in; whatever is not well formed is dropped (and an oauth
        relay without its continuation is no relay)."""
        relay = relay if relay in RELAYS else None
        continuation = continuation if isinstance(continuation, str) and CONTINUATION.fullmatch(continuation) else None
        if relay == OAUTH_RELAY and continuation is None:
            relay = None
        return cls(
            relay=relay,
            client_origin=client_origin if isinstance(client_origin, str) else None,
            continuation=continuation if relay == OAUTH_RELAY else None,
        )


def success_target(settings: Settings, intent: LoginIntent) -> str:
    """Where the browser goes with the credential (without the fragment)."""
    web = origin_of(settings.web_client_url)
    if web:
        return web
    if intent.relay == "desktop":
        return DESKTOP_TARGET
    if intent.relay == "web-popup":
        if intent.client_origin:
            return f"{POPUP_PATH}?{urlencode({'client_origin': intent.client_origin})}"
        return POPUP_PATH
    return COMPLETE_PATH


def success_response(settings: Settings, intent: LoginIntent, token: str) -> Response:
    """``303`` to the target with ``#token=<credential>``; never cached."""
    location = f"{success_target(settings, intent)}#token={quote(token, safe='')}"
    return RedirectResponse(location, status_code=303, headers=_NO_STORE)


def wants_json(request: Request) -> bool:
    return "application/json" in request.headers.get("accept", "").lower()


def failure_response(request: Request, err: SsoError) -> Response:
    """``400`` with the stable code, as the shared JSON error body or as a small HTML page depending on ``Accept``."""
    if wants_json(request):
        return error_response(err, headers=_NO_STORE)
    body = _page(
        "Sign-in failed",
        f"<h1>Sign-in failed</h1><p>Error code: <code id='code'>{html.escape(err.sso_code)}</code></p>"
        f"<p>{html.escape(err.message)}</p><p>Close this window and try again, or ask the server owner.</p>",
    )
    return HTMLResponse(body, status_code=400, headers={**_NO_STORE, "Content-Security-Policy": "default-src 'none'"})


_NO_STORE = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}


def _page(title: str, body: str, script: str = "", nonce: str = "") -> str:
    script_tag = f"<script nonce='{nonce}'>{script}</script>" if script else ""
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)} · Hangar</title></head><body>{body}{script_tag}</body></html>"
    )


def _script_response(title: str, body: str, script: str) -> HTMLResponse:
    nonce = secrets.token_urlsafe(16)
    headers = {
        **_NO_STORE,
        "Content-Security-Policy": f"default-src 'none'; script-src 'nonce-{nonce}'",
    }
    return HTMLResponse(_page(title, body, script, nonce), headers=headers)


async def popup_complete(request: Request) -> Response:
    """Post the fragment's credential to the opener, at an origin the allow-list trusts (else at this page's own
    origin: an opener there is this server's own web client), then close."""
    settings: Settings = request.app.state.ctx.settings
    declared = request.query_params.get("client_origin")
    target = origin_of(declared) if is_trusted_origin(declared, settings) else None
    target = target or origin_of(settings.public_url) or request_origin(request)
    script = (
        "(function(){var m=/[#&]token=([^&]*)/.exec(location.hash);"
        "history.replaceState(null,'',location.pathname+location.search);"
        "var s=document.getElementById('status');"
        "if(!m){s.textContent='No credential was handed over.';return;}"
        "if(!window.opener){s.textContent='The window that started sign-in is gone; start again.';return;}"
        f"window.opener.postMessage({{type:{json.dumps(POPUP_MESSAGE_TYPE)},"
        f"token:decodeURIComponent(m[1])}},{json.dumps(target)});"
        "s.textContent='Signed in. You can close this window.';window.close();})();"
    )
    body = "<h1>Signing in</h1><p id='status'>Handing the sign-in to Hangar…</p>"
    return _script_response("Signing in", body, script)


async def auth_complete(request: Request) -> Response:
    """Same-origin landing page: keeps the credential in this origin's storage and clears the fragment."""
    script = (
        "(function(){var m=/[#&]token=([^&]*)/.exec(location.hash);"
        "history.replaceState(null,'',location.pathname);"
        "var s=document.getElementById('status');"
        "if(!m){s.textContent='No credential was handed over.';return;}"
        "try{localStorage.setItem('hangar.token',decodeURIComponent(m[1]));}catch(e){}"
        "s.textContent='Signed in. You can close this window.';})();"
    )
    body = "<h1>Signed in</h1><p id='status'>Finishing sign-in…</p>"
    return _script_response("Signed in", body, script)


def handoff_routes() -> list[BaseRoute]:
    return [
        Route(POPUP_PATH, popup_complete, methods=["GET"]),
        Route(COMPLETE_PATH, auth_complete, methods=["GET"]),
    ]
