"""What the ``/mcp`` door writes on the wire itself, before the SDK sees a request or beside it: the paths, CORS,
the 401 challenge, plain JSON answers, the protected-resource metadata, and the few looks into a request body
the gate needs to route it.

The SDK answers everything it serves; these are the answers it never gets to give (no credential, a body too
large, a credential out of sessions, a preflight) and what routing reads before handing the request over.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import Message, Scope, Send

from hangar.httpkit.requests import bearer_token

MAX_BODY = 1024 * 1024
# JSON-RPC 2.0's code for a request that is not one (the SDK's ``INVALID_REQUEST``), written here so that the modules
# that only need the paths above (the OAuth metadata, the server's routes) do not load the SDK.
INVALID_REQUEST = -32600
METADATA_PATH = "/.well-known/oauth-protected-resource"
MCP_PATH = "/mcp"  # the resource the authorization server issues tokens for (RFC 8707)

# Browser-based MCP clients (an inspector page, a web agent) call from their own origin. The endpoint trusts no
# ambient credential (no cookie: the bearer header is the only one), so any origin may call it and read the
# headers the protocol needs; a page still needs a credential someone gave it.
CORS_HEADERS: list[tuple[bytes, bytes]] = [
    (b"access-control-allow-origin", b"*"),
    (b"access-control-expose-headers", b"mcp-session-id, mcp-protocol-version, www-authenticate"),
]
PREFLIGHT_HEADERS: list[tuple[bytes, bytes]] = [
    (b"access-control-allow-methods", b"GET, POST, DELETE, OPTIONS"),
    (
        b"access-control-allow-headers",
        b"authorization, content-type, accept, mcp-session-id, mcp-protocol-version, last-event-id",
    ),
    (b"access-control-max-age", b"600"),
]


def header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return str(value.decode("latin-1"))
    return None


def bearer(scope: Scope) -> str | None:
    return bearer_token(header(scope, b"authorization"))


async def answer(send: Send, status: int, body: dict[str, Any], headers: list[tuple[bytes, bytes]]) -> None:
    await send_json(send, status, json.dumps(body).encode(), headers)


async def send_json(send: Send, status: int, raw: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    """A JSON answer of bytes already written."""
    head = [(b"content-type", b"application/json"), (b"content-length", str(len(raw)).encode()), *headers]
    await send({"type": "http.response.start", "status": status, "headers": head})
    await send({"type": "http.response.body", "body": raw})


async def unauthorized(send: Send, origin: str, problem: str | None) -> None:
    """The 401 that points a client at the protected-resource metadata, where it learns how to get a token."""
    challenge = f'Bearer resource_metadata="{origin}{METADATA_PATH}"'
    if problem is not None:
        challenge += f', error="invalid_token", error_description="{problem}"'
    body = {"error": "invalid_token" if problem else "unauthorized", "error_description": problem or "sign in"}
    await answer(send, 401, body, [(b"www-authenticate", challenge.encode())])


def with_cors(send: Send) -> Send:
    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", []), *CORS_HEADERS]}
        await send(message)

    return sending


async def preflight(send: Send) -> None:
    await send({"type": "http.response.start", "status": 204, "headers": PREFLIGHT_HEADERS})
    await send({"type": "http.response.body", "body": b""})


async def protected_resource(request: Request) -> JSONResponse:
    """OAuth 2.0 protected-resource metadata (RFC 9728): where ``/mcp`` is and who issues its tokens."""
    origin = request.app.state.ctx.settings.origin
    return JSONResponse(
        {
            "resource": f"{origin}{MCP_PATH}",
            "authorization_servers": [origin],
            "bearer_methods_supported": ["header"],
            "resource_name": "Hangar",
        },
        headers={"access-control-allow-origin": "*"},
    )


def rpc_error(message: str, code: int = INVALID_REQUEST, request_id: Any = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def request_id(body: bytes) -> Any:
    message = json.loads(body)
    found = message.get("id") if isinstance(message, dict) else None
    return found if isinstance(found, (str, int)) else None


def is_initialize(body: bytes) -> bool:
    try:
        message = json.loads(body)
    except ValueError:
        return False
    return isinstance(message, dict) and message.get("method") == "initialize"
