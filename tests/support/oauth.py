"""Client-side pieces for the OAuth tests: a loopback redirect URI that records the authorization response (as a
native MCP client listens for it), in-memory token storage for the MCP SDK's ``OAuthClientProvider``, PKCE
values, registration, and a cookie-keeping HTTP client that walks the sign-in and consent pages like a browser
without one (the forms it posts are the ones the pages serve)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit

import httpx
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthToken

from tests.peers.oidc_provider import forms_of


class LoopbackCallback:
    """``http://127.0.0.1:<port>/callback``: answers the browser with a short page and keeps the query."""

    def __init__(self) -> None:
        self.uri = ""
        self._got: asyncio.Future[dict[str, str]] = asyncio.get_running_loop().create_future()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = (await asyncio.wait_for(reader.readline(), 10)).decode("latin-1")
            while (await asyncio.wait_for(reader.readline(), 10)) not in (b"\r\n", b"\n", b""):
                pass
            target = line.split(" ")[1] if line.count(" ") >= 2 else "/"
            query = {k: v[0] for k, v in parse_qs(urlsplit(target).query).items()}
            if urlsplit(target).path == "/callback" and not self._got.done():
                self._got.set_result(query)
            body = b"<!doctype html><title>done</title><p id='done'>You may close this window.</p>"
            head = f"HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {len(body)}\r\n"
            writer.write(head.encode() + b"connection: close\r\n\r\n" + body)
            await writer.drain()
        finally:
            writer.close()

    async def query(self, timeout: float = 60) -> dict[str, str]:
        return await asyncio.wait_for(asyncio.shield(self._got), timeout)

    async def result(self) -> AuthorizationCodeResult:
        """The SDK's ``callback_handler``."""
        got = await self.query()
        if "code" not in got:
            raise AssertionError(f"the authorization was not granted: {got}")
        return AuthorizationCodeResult(code=got["code"], state=got.get("state"), iss=got.get("iss"))


@contextlib.asynccontextmanager
async def loopback_callback() -> AsyncIterator[LoopbackCallback]:
    callback = LoopbackCallback()
    server = await asyncio.start_server(callback._serve, "127.0.0.1", 0)
    callback.uri = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/callback"
    try:
        yield callback
    finally:
        server.close()
        await server.wait_closed()


@dataclass
class MemoryTokens:
    """The SDK's ``TokenStorage``, kept in memory (what a client would keep in its keychain)."""

    tokens: OAuthToken | None = None
    client: OAuthClientInformationFull | None = None
    history: list[OAuthToken] = field(default_factory=list)

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens
        self.history.append(tokens)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


def pkce() -> tuple[str, str]:
    """A verifier and its S256 challenge."""
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


async def register(http: httpx.AsyncClient, base: str, **metadata: Any) -> dict[str, Any]:
    meta = {"client_name": "Test client", "token_endpoint_auth_method": "none", **metadata}
    reply = await http.post(f"{base}/auth/oauth/register", json=meta)
    assert reply.status_code == 201, reply.text
    return dict(reply.json())


def authorize_url(base: str, client: dict[str, Any], challenge: str, **overrides: str) -> str:
    params = {
        "response_type": "code",
        "client_id": client["client_id"],
        "redirect_uri": client["redirect_uris"][0],
        "state": secrets.token_urlsafe(16),
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "resource": f"{base}/mcp",
        **overrides,
    }
    return f"{base}/auth/oauth/authorize?{urlencode(params)}"


def form(page: httpx.Response, action: str) -> dict[str, Any]:
    """The form of a served page that posts to ``action``, with its hidden fields."""
    found = [f for f in forms_of(page.text) if f["action"] == action]
    assert found, f"no form posting to {action} in {page.status_code}: {page.text[:800]}"
    return found[0]


async def sign_in_and_decide(
    browser: httpx.AsyncClient,
    url: str,
    pairing_code: str,
    *,
    workspace: str = "*",
    access: str = "read",
    decision: str = "approve",
) -> dict[str, str]:
    """Walk the pages from the authorization URL to the redirect; answers the redirect's query."""
    page = await browser.get(url)
    assert page.status_code == 200, page.text[:800]
    pair = form(page, "/auth/oauth/pair")
    signed = await browser.post(urljoin(url, pair["action"]), data={**pair["fields"], "code": pairing_code})
    assert signed.status_code == 303, signed.text[:800]
    consent = await browser.get(urljoin(url, signed.headers["location"]))
    assert consent.status_code == 200, consent.text[:800]
    choice = form(consent, "/auth/oauth/decide")
    fields = {**choice["fields"], "workspace": workspace, "access": access, "decision": decision}
    decided = await browser.post(urljoin(url, choice["action"]), data=fields)
    assert decided.status_code == 303, decided.text[:800]
    return {k: v[0] for k, v in parse_qs(urlsplit(decided.headers["location"]).query).items()}
