"""Handing the device credential to the client after an SSO login, and the failure pages (CONTRACTS §4).

Success answers ``303 Location: <target>#token=<credential>``; the credential travels in the fragment so it
never reaches a server log or a ``Referer``. When the client that started the sign-in gave a ``client_state``
(a random value it keeps, in the web client ``sessionStorage``), the fragment echoes it: ``#token=...&state=...``.
That is how a client tells a hand-off it asked for from a link someone else made (login CSRF: a link carrying
the sender's credential would otherwise sign the person into the sender's account); a client takes a
credential without asking only when the state matches one it kept. The target is, in order:

1. the ``--web-client-url`` origin when set (whatever the relay);
2. ``hangar://auth/complete`` for ``relay=desktop``;
3. ``/auth/popup-complete`` for ``relay=web-popup``: a page that posts the credential and the state to the tab
   that opened it with ``postMessage``, to the ``client_origin`` declared at login only when the allow-list
   trusts it (else to the server's own origin);
4. same-origin ``/auth/complete`` when no relay was given: a page that stores nothing and hands the fragment to
   the web client at ``/``, which applies its own rules (keep it when the state matches, else ask the person).

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
from hangar.core.metrics import Metrics
from hangar.errors import InvalidArgs
from hangar.httpkit.errors import error_response
from hangar.sso.errors import SsoError

OAUTH_RELAY = "oauth"
RELAYS: tuple[str, ...] = ("desktop", "web-popup", OAUTH_RELAY)
# What a continuation or a client state may look like: an opaque random value, never a URL or a path.
CONTINUATION = CLIENT_STATE = re.compile(r"[A-Za-z0-9_-]{16,128}")
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
    client_state: str | None = None  # echoed in the hand-off's fragment, so the client knows it asked for it

    @classmethod
    def from_request(cls, request: Request) -> LoginIntent:
        """Read ``relay``, ``client_origin``, ``continuation`` and ``client_state``; an unknown relay, a malformed
        continuation or client state is refused, an untrusted origin dropped."""
        relay = request.query_params.get("relay") or None
        if relay is not None and relay not in RELAYS:
            raise InvalidArgs(f"relay must be desktop, web-popup or oauth, not {relay!r}", field="relay")
        continuation = None
        if relay == OAUTH_RELAY:
            continuation = request.query_params.get("continuation") or ""
            if not CONTINUATION.fullmatch(continuation):
                raise InvalidArgs("relay=oauth needs the continuation of the sign-in page", field="continuation")
        client_state = request.query_params.get("client_state") or None
        if client_state is not None and not CLIENT_STATE.fullmatch(client_state):
            raise InvalidArgs(
                "client_state must be 16 to 128 letters, digits, '-' or '_' (a random value the client keeps)",
                field="client_state",
            )
        raw_origin = request.query_params.get("client_origin")
        settings: Settings = request.app.state.ctx.settings
        client_origin = None
        if relay == "web-popup" and is_trusted_origin(raw_origin, settings):
            client_origin = origin_of(raw_origin)
        return cls.restore(relay, client_origin, continuation, client_state)

    def to_dict(self) -> dict[str, Any]:
        return {
            "relay": self.relay,
            "client_origin": self.client_origin,
            "continuation": self.continuation,
            "client_state": self.client_state,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> LoginIntent:
        return cls.restore(**(data or {}))

    @classmethod
    def restore(
        cls, relay: Any = None, client_origin: Any = None, continuation: Any = None, client_state: Any = None, **_: Any
    ) -> LoginIntent:
        """An intent as stored with a pending sign-in; whatever is not well formed is dropped (an oauth relay
        without its continuation is no relay, and a sign-in that hands no credential to a client has no client
        state to echo)."""
        relay = relay if relay in RELAYS else None
        continuation = continuation if _opaque(continuation, CONTINUATION) else None
        if relay == OAUTH_RELAY and continuation is None:
            relay = None
        return cls(
            relay=relay,
            client_origin=client_origin if isinstance(client_origin, str) else None,
            continuation=continuation if relay == OAUTH_RELAY else None,
            client_state=client_state if relay != OAUTH_RELAY and _opaque(client_state, CLIENT_STATE) else None,
        )


def _opaque(value: Any, shape: re.Pattern[str]) -> bool:
    return isinstance(value, str) and shape.fullmatch(value) is not None


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


def handoff_fragment(intent: LoginIntent, token: str) -> str:
    """``token=<credential>``, then ``&state=<client state>`` when the client gave one."""
    fragment = f"token={quote(token, safe='')}"
    if intent.client_state:
        fragment += f"&state={intent.client_state}"  # its shape needs no escaping
    return fragment


def success_response(settings: Settings, intent: LoginIntent, token: str) -> Response:
    """``303`` to the target with ``#token=<credential>[&state=<client state>]``; never cached."""
    location = f"{success_target(settings, intent)}#{handoff_fragment(intent, token)}"
    return RedirectResponse(location, status_code=303, headers=_NO_STORE)


def wants_json(request: Request) -> bool:
    return "application/json" in request.headers.get("accept", "").lower()


def failure_response(request: Request, err: SsoError) -> Response:
    """``400`` with the stable code, as the shared JSON error body or as a small HTML page depending on ``Accept``.
    Every refused sign-in is answered here, so it is counted here (by the protocol its route serves)."""
    metrics = getattr(request.app.state, "metrics", None)  # the server's (``build_server``)
    if isinstance(metrics, Metrics):
        protocol = request.url.path.split("/")[1] if request.url.path.count("/") > 1 else ""
        metrics.sso_sign_in(protocol, err.sso_code)
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
    """Post the fragment's credential and state to the opener, at an origin the allow-list trusts (else at this
    page's own origin: an opener there is this server's own web client), then close. The opener takes the
    credential only when the state is one it kept (``web/src/auth/signin.ts``)."""
    settings: Settings = request.app.state.ctx.settings
    declared = request.query_params.get("client_origin")
    target = origin_of(declared) if is_trusted_origin(declared, settings) else None
    target = target or origin_of(settings.public_url) or request_origin(request)
    script = (
        "(function(){var m=/[#&]token=([^&]*)/.exec(location.hash),t=/[#&]state=([^&]*)/.exec(location.hash);"
        "history.replaceState(null,'',location.pathname+location.search);"
        "var s=document.getElementById('status');"
        "if(!m){s.textContent='No credential was handed over.';return;}"
        "if(!window.opener){s.textContent='The window that started sign-in is gone; start again.';return;}"
        f"window.opener.postMessage({{type:{json.dumps(POPUP_MESSAGE_TYPE)},"
        f"token:decodeURIComponent(m[1]),state:t?decodeURIComponent(t[1]):null}},{json.dumps(target)});"
        "s.textContent='Signed in. You can close this window.';window.close();})();"
    )
    body = "<h1>Signing in</h1><p id='status'>Handing the sign-in to Hangar…</p>"
    return _script_response("Signing in", body, script)


async def auth_complete(request: Request) -> Response:
    """Same-origin landing page: stores nothing itself. It hands the fragment to the web client at ``/`` (which
    keeps the credential when the state is one it kept, and otherwise asks the person first), replacing this
    page in the history so the credential is not left in it. Storing here would let anyone's link
    (``/auth/complete#token=<their credential>``) replace the credential this browser holds."""
    script = (
        "(function(){var h=location.hash;"
        "history.replaceState(null,'',location.pathname);"
        "if(!/[#&]token=/.test(h)){document.getElementById('status').textContent='No credential was handed over.';"
        "return;}"
        "location.replace('/'+h);})();"
    )
    body = "<h1>Signing in</h1><p id='status'>Handing the sign-in to Hangar…</p>"
    return _script_response("Signing in", body, script)


def handoff_routes() -> list[BaseRoute]:
    return [
        Route(POPUP_PATH, popup_complete, methods=["GET"]),
        Route(COMPLETE_PATH, auth_complete, methods=["GET"]),
    ]
