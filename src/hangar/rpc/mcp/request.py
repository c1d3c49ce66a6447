"""What the gate leaves on the HTTP request it hands the SDK, and how a handler the SDK calls reads it back.

The SDK gives lowlevel handlers and middleware a context (``ctx``) whose ``request`` is the Starlette request it
serves and whose ``session`` proxies its connection; it offers neither the caller nor the connection directly.
The gate authenticates every request once and leaves the caller on the ASGI scope, so the handlers (and the
dispatcher they call) need not check the same credential twice within one request.
"""

from __future__ import annotations

import contextlib
from typing import Any

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from starlette.types import Scope

from hangar.core.principal import Principal
from hangar.rpc.mcp.wire import bearer, header

PRINCIPAL_KEY = "hangar.principal"  # where the gate leaves the caller on the request's ASGI scope


def with_caller(scope: Scope, token: str, principal: Principal) -> Scope:
    """The request's scope carrying its authenticated caller. The SDK keys a session to the ``user`` found here:
    the same credential must come back with the session id."""
    access = AccessToken(token=token, client_id=principal.device_id, scopes=[], subject=principal.user_id)
    return {**scope, "user": AuthenticatedUser(access), PRINCIPAL_KEY: principal}


def scope_of(ctx: Any) -> dict[str, Any] | None:
    """The ASGI scope of the HTTP request the SDK is serving."""
    scope = getattr(getattr(ctx, "request", None), "scope", None)
    return scope if isinstance(scope, dict) else None


def principal_of(ctx: Any) -> Principal | None:
    """The caller as the gate authenticated the very HTTP request the SDK is serving."""
    scope = scope_of(ctx)
    found = scope.get(PRINCIPAL_KEY) if scope is not None else None
    return found if isinstance(found, Principal) else None


def token_of(ctx: Any) -> str | None:
    """The caller's credential, as the gate put it on the request the SDK is serving."""
    scope = scope_of(ctx)
    if scope is None:
        return None
    user = scope.get("user")
    if isinstance(user, AuthenticatedUser):
        return user.access_token.token
    return bearer(scope)


def session_id_of(ctx: Any) -> str:
    """The MCP session the request belongs to (empty for a sessionless request)."""
    scope = scope_of(ctx)
    return (header(scope, MCP_SESSION_ID_HEADER.lower().encode()) or "") if scope is not None else ""


def connection(ctx: Any) -> Any:
    """The SDK's connection (for a stateful client: its session) a request belongs to. The SDK offers it to
    lowlevel handlers and middleware only through the session proxy."""
    return getattr(getattr(ctx, "session", None), "_connection", None)


def connection_stack(ctx: Any) -> contextlib.AsyncExitStack | None:
    """The exit stack of the connection a request belongs to: it unwinds when the connection ends."""
    stack = getattr(connection(ctx), "exit_stack", None)
    return stack if isinstance(stack, contextlib.AsyncExitStack) else None
