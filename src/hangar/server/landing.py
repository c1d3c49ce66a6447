"""The server's landing page: what ``/`` answers while the web client is not built (``hangar.server.webclient``),
saying what this server is, how to build the browser client and how to connect without it (no script, no
third-party origin, a strict Content-Security-Policy)."""

from __future__ import annotations

import html

from starlette.requests import Request
from starlette.responses import HTMLResponse

import hangar

CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Hangar server</title>
<style>body{{font:16px/1.5 system-ui,sans-serif;max-width:44rem;margin:3rem auto;padding:0 1rem;color:#1b1f24}}
code{{background:#f1f3f5;padding:.1rem .3rem;border-radius:4px}}
pre{{background:#f1f3f5;padding:.8rem;overflow:auto}}</style>
</head><body>
<h1>Hangar server {version}</h1>
<p>This is a self-hosted Hangar control center: workspaces where people and agents work together, pipelines,
rigs, single sign-on.</p>
<h2>The browser control center is not built</h2>
<p>This server serves the web client from <code>web/dist</code> of its checkout, which is not there yet. Build it
with <code>make run</code> (which builds it and starts the server), or by hand:</p>
<pre>cd web &amp;&amp; npm ci &amp;&amp; npm run build</pre>
<p>then reload this page.</p>
<h2>Connect without it</h2>
<ol>
<li>On the server's machine, in its checkout, mint a credential of the server owner (<code>DIR</code> is the data
directory the server printed when it started):
<pre>.venv/bin/hangar admin owner-token --data-dir DIR</pre></li>
<li>Open the RPC socket at <code>{ws}/rpc</code> with <code>Authorization: Bearer &lt;credential&gt;</code>, or send
<code>{{"type": "auth", "token": "..."}}</code> as the first frame.</li>
<li>Other people join with an invite code (<code>members.invite</code>) redeemed at <code>POST /auth/pair</code>,
or through single sign-on (<code>GET /auth/providers</code>).</li>
</ol>
<p>Health: <code>GET /healthz</code>; readiness: <code>GET /readyz</code>. The manual is on the public website,
under <em>Quick start</em>.</p>
</body></html>
"""


def landing_response(request: Request) -> HTMLResponse:
    origin = request.app.state.ctx.settings.origin
    ws = "wss" + origin.removeprefix("https") if origin.startswith("https") else "ws" + origin.removeprefix("http")
    body = PAGE.format(version=html.escape(hangar.__version__), ws=html.escape(ws))
    return HTMLResponse(
        body,
        headers={
            "Content-Security-Policy": CSP,
            "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "no-referrer",
            "Cache-Control": "no-cache",
        },
    )
