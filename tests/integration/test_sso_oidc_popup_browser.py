"""The web-popup hand-off in a real browser: a connect tab opens our popup page, which posts the credential from
a real OIDC sign-in back to it, only when the tab's origin is one the configuration names (never merely because it
is on loopback: a rig's forwarded port is too).

Headless Chromium (Debian's) loads the connect tab from a loopback origin; the tab records any message it gets
in its DOM, read over the DevTools protocol once the popup has run and closed itself.
"""

from __future__ import annotations

import asyncio
import http.server
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import httpx
import pytest

from tests.peers.oidc_provider import drive_login, oidc_provider
from tests.peers.sso_parts import SSO_PARTS
from tests.support.chromium import CHROMIUM, browser_page
from tests.support.rpc import RpcClient
from tests.support.server import running_server

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Makefile APT_PACKAGES)")

CONNECT_TAB = (
    "<!doctype html><html><body><script>"
    "window.addEventListener('message', function (e) {"
    "  document.body.setAttribute('data-got', e.origin + ' ' + JSON.stringify(e.data)); });"
    "var popup = window.open(%s);"
    "setInterval(function () { if (popup && popup.closed) document.body.setAttribute('data-closed', '1'); }, 50);"
    "</script></body></html>"
)


class ConnectTab:
    """A connect tab served on a loopback address; ``opens`` sets the URL its page opens as a popup."""

    def __init__(self, host: str) -> None:
        page: dict[str, bytes] = {"body": b""}
        self._page = page

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/html")
                self.end_headers()
                self.wfile.write(page["body"])

            def log_message(self, *_args: Any) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer((host, 0), Handler)
        shown = "localhost" if host == "127.0.0.1" else host
        self.origin = f"http://{shown}:{self._server.server_address[1]}"

    def opens(self, url: str) -> None:
        self._page["body"] = (CONNECT_TAB % repr(url)).encode()


@contextmanager
def connect_tab(host: str) -> Iterator[ConnectTab]:
    tab = ConnectTab(host)
    thread = threading.Thread(target=tab._server.serve_forever, daemon=True)
    thread.start()
    try:
        yield tab
    finally:
        tab._server.shutdown()
        tab._server.server_close()


async def connect_tab_result(url: str, profile: Path) -> str | None:
    """Open ``url`` in headless Chromium, wait until the popup it opens has run and closed itself (the tab
    watches ``popup.closed``), and return what the tab recorded (None when no message reached it). Driven over
    the DevTools protocol."""
    async with browser_page(profile, "--disable-popup-blocking") as page:
        await page.navigate(url)
        await page.wait_for("!!document.body && document.body.getAttribute('data-closed') === '1'")
        # The popup posts before it closes; let the message event run, then read.
        await asyncio.sleep(0.3)
        got = await page.evaluate("document.body.getAttribute('data-got')")
    return got if isinstance(got, str) else None


async def test_popup_posts_the_credential_only_to_a_trusted_connect_tab(tmp_path: Path) -> None:
    # Three connect tabs: one on the origin the configuration names (a web client in development), one on
    # another loopback port (what a rig's forwarded port serves), one on another loopback address.
    with connect_tab("127.0.0.1") as named, connect_tab("127.0.0.1") as forwarded, connect_tab("127.0.0.2") as other:
        async with running_server(tmp_path, parts=SSO_PARTS, trusted_origins=(named.origin,)) as srv:
            accounts = {"alice": {"email": "alice@example.com", "email_verified": True, "name": "Alice"}}
            async with oidc_provider(redirect_uris=[f"{srv.url}/oidc/callback"], accounts=accounts) as peer:
                async with RpcClient(srv.ws_url, srv.owner_token) as c:
                    config = {"enabled": True, "issuer": peer.issuer, "clientId": peer.client_id}
                    await c.call("sso.saveConfig", kind="oidc", config=config)
                for tab, trusted in ((named, True), (forwarded, False), (other, False)):
                    # The real sign-in, declaring the connect tab's origin.
                    async with httpx.AsyncClient(follow_redirects=False) as browser:
                        query = f"relay=web-popup&client_origin={quote(tab.origin, safe='')}"
                        done = await drive_login(browser, f"{srv.url}/oidc/login?{query}", login="alice")
                    assert done.status_code == 303
                    token = done.headers["location"].split("#token=", 1)[1]
                    tab.opens(f"{srv.url}{done.headers['location']}")
                    got = await connect_tab_result(tab.origin + "/", tmp_path / f"profile-{tab.origin[7:]}")
                    if trusted:
                        assert got is not None and got.startswith(f"{srv.url} "), got
                        # No client state was given at login, so none comes back (a connect tab would not take it).
                        message = {"type": "hangar:sso", "token": unquote(token), "state": None}
                        assert json.loads(got.split(" ", 1)[1]) == message
                        async with RpcClient(srv.ws_url, unquote(token)) as c:
                            assert (await c.call("users.me"))["email"] == "alice@example.com"
                    else:
                        # Not on the allow-list: the popup page posted to the server's own origin instead.
                        assert got is None, (tab.origin, got)
