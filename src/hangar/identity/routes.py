"""HTTP routes of identity: ``POST /auth/pair``."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from hangar.core import wire
from hangar.core.context import AppContext
from hangar.core.http import read_body
from hangar.core.ratelimit import rate_limited
from hangar.errors import HangarError, InvalidArgs
from hangar.identity.pairing import Pairing, PairingDisabled
from hangar.identity.service import IdentityService

MAX_BODY = 16 * 1024


def error_response(err: HangarError, status: int | None = None, code: str | None = None) -> JSONResponse:
    return JSONResponse(
        {"error": {"code": code or err.code, "message": err.message}}, status_code=status or err.http_status
    )


async def pair(request: Request) -> Response:
    ctx: AppContext = request.app.state.ctx
    try:
        body = await read_body(request, MAX_BODY)
        data = wire.loads(body or b"null", field="body")
        if not isinstance(data, dict):
            raise InvalidArgs("the body must be a JSON object: {code, deviceName}", field="body")
        code, name = data.get("code"), data.get("deviceName", "")
        if not isinstance(code, str):
            raise InvalidArgs("code must be a string", field="code")
        if not isinstance(name, str):
            raise InvalidArgs("deviceName must be a string", field="deviceName")
        paired = await ctx.service(Pairing).redeem(code, name)
    except PairingDisabled as err:
        return error_response(err, 403, "pairing_disabled")
    except HangarError as err:
        return error_response(err)
    return JSONResponse({"token": paired.token, "userId": paired.user_id})


async def me(request: Request) -> Response:
    """The principal behind a bearer credential: the simplest check that a credential still works."""
    ctx: AppContext = request.app.state.ctx
    try:
        principal = await ctx.service(IdentityService).authenticate_bearer(request)
    except HangarError as err:
        return error_response(err)
    return JSONResponse(
        {"userId": principal.user_id, "deviceId": principal.device_id, "isServerOwner": principal.is_server_owner}
    )


IDENTITY_ROUTES = [
    Route("/auth/pair", rate_limited("pair", pair), methods=["POST"]),
    Route("/auth/me", me, methods=["GET"]),
]
