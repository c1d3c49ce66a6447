"""Errors of the authorization server as its RFCs spell them, and the headers every JSON answer carries.

The token, revocation and registration endpoints answer ``{"error": "<code>", "error_description": "..."}``
(RFC 6749 section 5.2, RFC 7591 section 3.2.2) with ``Cache-Control: no-store``; the description names what
was wrong and never carries a token, code or secret. The endpoints hold no cookie-based authority, so any
origin may call them (browser-based MCP clients discover, register and redeem from their own origin).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from starlette.responses import JSONResponse, Response

NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}
CORS = {"Access-Control-Allow-Origin": "*"}


class OAuthError(Exception):
    def __init__(
        self, error: str, description: str, *, status: int = 400, headers: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(f"{error}: {description}")
        self.error = error
        self.description = description
        self.status = status
        self.headers = dict(headers or {})


def json_answer(
    body: Mapping[str, Any], status: int = 200, headers: Mapping[str, str] | None = None, *, cache: str | None = None
) -> JSONResponse:
    """A JSON answer any origin may read; never stored by a cache unless ``cache`` says how long it may be."""
    caching = {"Cache-Control": cache} if cache else NO_STORE
    return JSONResponse(dict(body), status_code=status, headers={**caching, **CORS, **(headers or {})})


def error_answer(err: OAuthError) -> JSONResponse:
    return json_answer({"error": err.error, "error_description": err.description}, err.status, err.headers)


def preflight(methods: str) -> Response:
    """The answer to a browser's CORS preflight for one of the JSON endpoints."""
    headers = {
        **CORS,
        "Access-Control-Allow-Methods": methods,
        "Access-Control-Allow-Headers": "authorization, content-type, mcp-protocol-version",
        "Access-Control-Max-Age": "600",
    }
    return Response(status_code=204, headers=headers)
