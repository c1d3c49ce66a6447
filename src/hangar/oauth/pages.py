"""The sign-in, consent and error pages of the authorization server: server-rendered HTML, no script.

Every value a client or a person supplied (the client's name, its redirect URI, workspace names, a display
name) is HTML-escaped. Pages load nothing but their own stylesheet from this origin; the policy forbids
scripts, inline styles, framing (``frame-ancestors 'none'``) and any other origin, and lets forms post only
here, plus (on the consent page) to the client's redirect target, which the decision's 303 goes to.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlencode, urlsplit

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from hangar.sso import Provider

STYLE_PATH = "/auth/oauth/page.css"
PAIR_PATH = "/auth/oauth/pair"
SSO_PATH = "/auth/oauth/sso"
CONSENT_PATH = "/auth/oauth/consent"
DECIDE_PATH = "/auth/oauth/decide"

STYLE = """
body{font:16px/1.45 system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem;color:#1d232b}
h1{font-size:1.5rem}h2{font-size:1.1rem;margin-top:2rem}
code{background:#eef1f4;padding:.1rem .3rem;border-radius:3px;word-break:break-all}
.claim{color:#56606b;font-size:.9rem}.error{background:#fdecec;border:1px solid #e3a1a1;padding:.6rem .8rem}
fieldset{border:1px solid #cfd6dd;margin:1rem 0;padding:.6rem .9rem}label{display:block;margin:.35rem 0}
input[type=text]{font-size:1.1rem;padding:.35rem;letter-spacing:.08em;text-transform:uppercase}
button,.button{font-size:1rem;padding:.45rem 1rem;margin:.3rem .4rem .3rem 0;display:inline-block}
.button{border:1px solid #8a96a3;border-radius:3px;color:inherit;text-decoration:none}
"""


def _csp(form_targets: Sequence[str]) -> str:
    targets = " ".join(["'self'", *form_targets])
    return (
        "default-src 'none'; style-src 'self'; img-src 'self'; "
        f"form-action {targets}; frame-ancestors 'none'; base-uri 'none'"
    )


def redirect_target(redirect_uri: str) -> str:
    """The CSP source of a registered redirect URI: its origin, or its private-use scheme."""
    parts = urlsplit(redirect_uri)
    scheme = parts.scheme.lower()
    if scheme in ("http", "https"):
        return f"{scheme}://{parts.netloc.lower()}"
    return f"{scheme}:"


def page(title: str, body: str, *, status: int = 200, form_targets: Sequence[str] = ()) -> HTMLResponse:
    document = (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width,initial-scale=1'>"
        f"<title>{html.escape(title)} · Hangar</title><link rel='stylesheet' href='{STYLE_PATH}'></head>"
        f"<body>{body}</body></html>"
    )
    headers = {
        "Content-Security-Policy": _csp(form_targets),
        "X-Frame-Options": "DENY",
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "Cache-Control": "no-store",
    }
    return HTMLResponse(document, status_code=status, headers=headers)


def error_page(title: str, message: str, *, status: int = 400) -> HTMLResponse:
    body = (
        f"<h1>{html.escape(title)}</h1><p id='error' class='error'>{html.escape(message)}</p>"
        "<p>Nothing was granted. Close this window and start the sign-in again from your application.</p>"
    )
    return page(title, body, status=status)


async def stylesheet(_request: Request) -> Response:
    """The stylesheet of the sign-in and consent pages."""
    return Response(STYLE, media_type="text/css", headers={"Cache-Control": "max-age=3600"})


@dataclass(frozen=True)
class Asking:
    """Who asks, for the top of both pages."""

    client_name: str
    redirect_uri: str
    request_id: str
    csrf: str


def _asking(a: Asking) -> str:
    return (
        f"<p><strong id='client'>{html.escape(a.client_name)}</strong> asks to use Hangar's tools for you "
        "(the product MCP endpoint).</p>"
        f"<p class='claim'>The name is the application's own claim. After you decide, this browser goes to "
        f"<code id='redirect'>{html.escape(a.redirect_uri)}</code>.</p>"
    )


def _hidden(a: Asking) -> str:
    return (
        f"<input type='hidden' name='request' value='{html.escape(a.request_id)}'>"
        f"<input type='hidden' name='csrf' value='{html.escape(a.csrf)}'>"
    )


def sign_in_page(
    a: Asking, *, providers: Sequence[Provider], pairing: bool, error: str | None = None, status: int = 200
) -> HTMLResponse:
    parts = ["<h1>Sign in to Hangar</h1>", _asking(a)]
    if error:
        parts.append(f"<p id='error' class='error'>{html.escape(error)}</p>")
    if pairing:
        parts.append(
            f"<form id='pair' method='post' action='{PAIR_PATH}'>{_hidden(a)}"
            "<label>Pairing code <input type='text' name='code' autocomplete='one-time-code' "
            "maxlength='20' required></label>"
            "<p class='claim'>Make one where you are already signed in to Hangar, with the "
            "<code>devices.pairingCode</code> operation (single use, 15 minutes).</p>"
            "<button type='submit'>Sign in with the code</button></form>"
        )
    if providers:
        parts.append("<h2>Or sign in with</h2>" if pairing else "<h2>Sign in with</h2>")
        for p in providers:
            query = urlencode({"request": a.request_id, "provider": p.id})
            parts.append(
                f"<a class='button' id='sso-{html.escape(p.id)}' href='{SSO_PATH}?{html.escape(query)}'>"
                f"{html.escape(p.label)}</a>"
            )
    if not pairing and not providers:
        parts.append(
            "<p class='error'>This server offers no way to sign in here: pairing is off and no single "
            "sign-on is set up.</p>"
        )
    return page("Sign in", "".join(parts), status=status)


@dataclass(frozen=True)
class WorkspaceChoice:
    id: str
    name: str
    role: str


def consent_page(
    a: Asking,
    *,
    person: str,
    workspaces: Sequence[WorkspaceChoice],
    server_owner: bool,
    error: str | None = None,
    status: int = 200,
) -> HTMLResponse:
    everything = "All my workspaces, now and later"
    if server_owner:
        everything += " (with changes allowed, this includes running the server)"
    options = [
        f"<label><input type='radio' name='workspace' value='*' checked> {html.escape(everything)}</label>",
        *(
            f"<label><input type='radio' name='workspace' value='{html.escape(w.id)}'> "
            f"Only <strong>{html.escape(w.name)}</strong> <span class='claim'>(you are {html.escape(w.role)})"
            "</span></label>"
            for w in workspaces
        ),
    ]
    body = [
        f"<h1>Allow {html.escape(a.client_name)}?</h1>",
        f"<p>Signed in as <strong id='person'>{html.escape(person)}</strong>.</p>",
        _asking(a),
    ]
    if error:
        body.append(f"<p id='error' class='error'>{html.escape(error)}</p>")
    body.append(
        f"<form id='consent' method='post' action='{DECIDE_PATH}'>{_hidden(a)}"
        f"<fieldset><legend>Which workspaces</legend>{''.join(options)}</fieldset>"
        "<fieldset><legend>What it may do</legend>"
        "<label><input type='radio' name='access' value='read' checked> Read only</label>"
        "<label><input type='radio' name='access' value='write'> Read and make changes, as you could</label>"
        "</fieldset>"
        f"<p class='claim'>It acts as you, never beyond your own role. It is listed among your devices as "
        f"<code>{html.escape(a.client_name)} (OAuth)</code>; end it at any time with <code>devices.revoke</code>.</p>"
        "<button type='submit' name='decision' value='approve' id='approve'>Allow</button>"
        "<button type='submit' name='decision' value='deny' id='deny'>Deny</button></form>"
    )
    return page("Allow access", "".join(body), status=status, form_targets=[redirect_target(a.redirect_uri)])
