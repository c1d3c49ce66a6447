"""The one renderer of JSON error bodies on HTTP, and the exception handler the server app installs with it.

Routes raise errors of the tree (``hangar.errors``); the handler answers the error's ``http_status`` with

    {"error": {"code": "<code>", "message": "<one sentence>"}}

plus ``"field"`` when an ``InvalidArgs`` names one, and the error's own headers (``Retry-After``). Anything else a
route lets escape is an ``internal`` error whose text stays in the log, except the loss of the PostgreSQL
connection, which is ``unavailable`` naming the database (``hangar.core.dbfailures.gone``). SCIM answers in the
body its RFC fixes (``hangar.sso.scim.errors``), and the sign-in routes show a page to browsers; their JSON goes
through here.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from starlette.requests import HTTPConnection
from starlette.responses import JSONResponse, Response

from hangar.core.dbfailures import gone
from hangar.errors import HangarError, Internal, InvalidArgs

log = logging.getLogger(__name__)


def error_body(err: HangarError) -> dict[str, Any]:
    body: dict[str, Any] = err.to_dict()
    if isinstance(err, InvalidArgs) and err.field:
        body["field"] = err.field
    return {"error": body}


def error_response(err: HangarError, headers: Mapping[str, str] | None = None) -> JSONResponse:
    return JSONResponse(error_body(err), status_code=err.http_status, headers={**err.http_headers(), **(headers or {})})


async def render_error(conn: HTTPConnection, exc: Exception) -> Response:
    """Starlette exception handler: an error of the tree as its status and body, anything else as ``internal``."""
    if conn.scope["type"] != "http":
        # A socket has no status line to answer with; the RPC and terminal endpoints close theirs themselves.
        raise exc
    if isinstance(exc, HangarError):
        return error_response(exc)
    ctx = getattr(conn.app.state, "ctx", None)
    down = gone(ctx.dbs.postgresql_url, exc) if ctx is not None else None
    if down is not None:
        log.warning("%s", down.message)
        return error_response(down)
    return error_response(Internal("the server failed to handle this request"))


EXCEPTION_HANDLERS: Mapping[Any, Any] = {HangarError: render_error, Exception: render_error}
