"""Run the certified ``oidc-provider`` npm package as a real OpenID Provider on loopback, and drive its login and
consent pages like a browser would (an httpx client with a cookie jar, following redirects by hand).

``npm ci`` runs once when ``node_modules`` is missing (the lock file pins every package).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx
from joserfc.jwk import RSAKey

from tests.peers import npm
from tests.support.chromium import Page
from tests.support.ports import free_port
from tests.support.rpc import RpcClient
from tests.support.server import RunningServer

PEER_DIR = Path(__file__).parent / "oidc-provider"


def ensure_installed() -> None:
    npm.ensure_installed(PEER_DIR, PEER_DIR / "node_modules" / "oidc-provider")


def signing_key(kid: str = "k1") -> dict[str, Any]:
    key = RSAKey.generate_key(2048, parameters={"kid": kid, "use": "sig", "alg": "RS256"})
    return dict(key.as_dict(private=True))


@dataclass
class OidcPeer:
    issuer: str
    port: int
    client_id: str
    client_secret: str | None
    accounts: dict[str, dict[str, Any]] = field(default_factory=dict)


@contextlib.asynccontextmanager
async def oidc_provider(
    *,
    redirect_uris: list[str],
    accounts: dict[str, dict[str, Any]],
    client_id: str = "hangar",
    client_secret: str | None = None,
    port: int | None = None,
    keys: list[dict[str, Any]] | None = None,
    issuer_host: str = "127.0.0.1",
) -> AsyncIterator[OidcPeer]:
    """A running provider with one client registered; stops when the block ends."""
    await asyncio.to_thread(ensure_installed)
    port = port or free_port()
    issuer = f"http://{issuer_host}:{port}"
    client: dict[str, Any] = {
        "client_id": client_id,
        "redirect_uris": redirect_uris,
        "grant_types": ["authorization_code"],
        "response_types": ["code"],
    }
    if client_secret:
        client |= {"client_secret": client_secret, "token_endpoint_auth_method": "client_secret_basic"}
    else:
        client["token_endpoint_auth_method"] = "none"
    cfg = {
        "issuer": issuer,
        "port": port,
        "clients": [client],
        "accounts": accounts,
        "jwks": {"keys": keys or [signing_key()]},
    }
    proc = await asyncio.create_subprocess_exec(
        "node",
        str(PEER_DIR / "server.mjs"),
        json.dumps(cfg),
        cwd=PEER_DIR,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        line = await asyncio.wait_for(proc.stdout.readline(), 30)
        if not line.startswith(b"ready "):
            err = await proc.stderr.read() if proc.stderr else b""
            raise RuntimeError(f"oidc-provider did not start: {line!r} {err.decode(errors='replace')[-2000:]}")
        yield OidcPeer(issuer, port, client_id, client_secret, accounts)
    finally:
        if proc.returncode is None:
            assert proc.stdin is not None
            proc.stdin.close()
            try:
                await asyncio.wait_for(proc.wait(), 10)
            except TimeoutError:
                proc.kill()
                await proc.wait()


@contextlib.asynccontextmanager
async def oidc_sign_in(srv: RunningServer, accounts: dict[str, dict[str, Any]]) -> AsyncIterator[OidcPeer]:
    """A provider registered for ``srv``'s callback, with ``srv``'s OIDC connection enabled for it (saved by the
    owner over the RPC socket): the sign-in screen offers it from then on."""
    async with oidc_provider(redirect_uris=[f"{srv.url}/oidc/callback"], accounts=accounts) as peer:
        async with RpcClient(srv.ws_url, srv.owner_token) as c:
            config = {"enabled": True, "issuer": peer.issuer, "clientId": peer.client_id}
            await c.call("sso.saveConfig", kind="oidc", config=config)
        yield peer


class _Forms(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.forms: list[dict[str, Any]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "form":
            self.forms.append({"action": a.get("action", ""), "method": a.get("method", "get"), "fields": {}})
        elif tag in ("input", "button") and self.forms and a.get("name"):
            self.forms[-1]["fields"][a["name"]] = a.get("value", "")


def forms_of(page: str) -> list[dict[str, Any]]:
    parser = _Forms()
    parser.feed(page)
    return parser.forms


async def drive_to_callback(
    http: httpx.AsyncClient,
    resp: httpx.Response,
    callback_prefix: str,
    *,
    login: str,
    password: str = "any-password",
    max_steps: int = 20,
) -> str:
    """From the redirect to the provider, through its login and consent forms, to the URL of our callback
    (returned, not fetched, so a test may replay or tamper with it)."""
    for _ in range(max_steps):
        if resp.status_code in (301, 302, 303, 307, 308):
            location = urljoin(str(resp.url), resp.headers["location"])
            if location.startswith(callback_prefix):
                return location
            resp = await http.get(location)
            continue
        forms = forms_of(resp.text) if resp.status_code == 200 else []
        if not forms:
            raise AssertionError(f"unexpected provider page {resp.status_code}: {resp.text[:500]}")
        form = forms[0]
        data = dict(form["fields"])
        if "login" in data or data.get("prompt") == "login":
            data.update({"login": login, "password": password})
        resp = await http.post(urljoin(str(resp.url), form["action"]), data=data)
    raise AssertionError("the sign-in did not come back to the callback")


async def drive_login(
    http: httpx.AsyncClient, start_url: str, *, login: str, password: str = "any-password"
) -> httpx.Response:
    """The whole sign-in from our ``/oidc/login``: returns our callback's response (hand-off or failure page),
    or the login endpoint's own response when it does not redirect to the provider."""
    start = await http.get(start_url)
    if start.status_code != 302:
        return start
    prefix = "{0.scheme}://{0.netloc}/oidc/callback".format(urlsplit(start_url))
    return await http.get(await drive_to_callback(http, start, prefix, login=login, password=password))


async def sign_in_in_browser(
    page: Page, *, login: str, until: str, password: str = "any-password", max_steps: int = 20
) -> str:
    """Work through the provider's login and consent pages in a real browser, from wherever ``page`` is, until
    its address starts with ``until`` (answered)."""
    for step in range(max_steps):
        href = str(await page.wait_for("document.readyState === 'complete' && location.href"))
        if href.startswith(until):
            return href
        if not await page.evaluate("!!document.forms[0]"):
            raise AssertionError(
                f"unexpected provider page at {href}: {await page.evaluate('document.body.innerText')}"
            )
        has_login = await page.evaluate("!!document.querySelector('form input[name=login]')")
        fields = {"login": login, "password": password} if has_login else {}
        # Mark this document: the next one (after the post and its redirects) will not carry the mark.
        await page.evaluate(f"window.__step = {step}; true")
        await page.submit("form", fields, button="button[type=submit], button")
        await page.wait_for(f"window.__step !== {step} && document.readyState === 'complete'")
    raise AssertionError("the sign-in did not come back")
