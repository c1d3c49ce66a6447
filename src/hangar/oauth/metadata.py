"""Where the authorization server's endpoints are, and its metadata document (RFC 8414).

Everything lives under ``/auth/oauth/`` and ``/.well-known/`` (paths the web client leaves alone, CONTRACTS
section 9). The issuer is the server's canonical origin (``--public-url``, else its listener), the same
origin the protected-resource metadata of ``/mcp`` names as its authorization server, so an MCP client finds
this document at the first address it tries (``/.well-known/oauth-authorization-server``).
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from hangar.config import Settings
from hangar.oauth.clients import AUTH_METHODS, GRANT_TYPES
from hangar.oauth.errors import json_answer, preflight
from hangar.rpc.mcp.wire import MCP_PATH

METADATA_PATH = "/.well-known/oauth-authorization-server"
AUTHORIZE_PATH = "/auth/oauth/authorize"
TOKEN_PATH = "/auth/oauth/token"
REGISTER_PATH = "/auth/oauth/register"
REVOKE_PATH = "/auth/oauth/revoke"


def resource_url(settings: Settings) -> str:
    """The one resource tokens are for: the product MCP endpoint."""
    return f"{settings.origin}{MCP_PATH}"


def is_our_resource(resource: str, settings: Settings) -> bool:
    """Whether an RFC 8707 ``resource`` parameter names our ``/mcp`` (a trailing slash allowed)."""
    return resource.rstrip("/") == resource_url(settings)


def document(settings: Settings) -> dict[str, Any]:
    origin = settings.origin
    return {
        "issuer": origin,
        "authorization_endpoint": origin + AUTHORIZE_PATH,
        "token_endpoint": origin + TOKEN_PATH,
        "registration_endpoint": origin + REGISTER_PATH,
        "revocation_endpoint": origin + REVOKE_PATH,
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": list(GRANT_TYPES),
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": list(AUTH_METHODS),
        "revocation_endpoint_auth_methods_supported": list(AUTH_METHODS),
        "authorization_response_iss_parameter_supported": True,
    }


async def authorization_server_metadata(request: Request) -> Response:
    """The authorization server metadata (RFC 8414)."""
    if request.method == "OPTIONS":
        return preflight("GET, OPTIONS")
    settings: Settings = request.app.state.ctx.settings
    # Metadata may be cached (it changes only with the server's configuration), unlike the token answers.
    return json_answer(document(settings), cache="max-age=300")
