"""HTTP routes of identity: ``POST /auth/pair`` and ``GET /auth/me``; errors are raised and the server's error
handler renders them (``hangar.httpkit.errors``)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from hangar.core import wire
from hangar.core.context import AppContext
from hangar.errors import InvalidArgs
from hangar.httpkit.ratelimit import failures_limited
from hangar.httpkit.requests import read_body
from hangar.identity.devices import device_name
from hangar.identity.pairing import Pairing
from hangar.identity.service import IdentityService

MAX_BODY = 16 * 1024


async def pair(request: Request) -> Response:
    ctx: AppContext = request.app.state.ctx
    body = await read_body(request, MAX_BODY)
    data = wire.loads(body or b"null", field="body")
    if not isinstance(data, dict):
        raise InvalidArgs("the body must be a JSON object: {code, deviceName}", field="body")
    code, name = data.get("code"), data.get("deviceName", "")
    if not isinstance(code, str):
        raise InvalidArgs("code must be a string", field="code")
    if not isinstance(name, str):
        raise InvalidArgs("deviceName must be a string", field="deviceName")
    if name.strip():  # checked before the code is spent; left empty, the device is called "device"
        name = device_name(name, field="deviceName")
    paired = await ctx.service(Pairing).redeem(code, name)
    return JSONResponse({"token": paired.token, "userId": paired.user_id})


async def me(request: Request) -> Response:
    """The principal behind a bearer credential: the simplest check that a credential still works, and who it
    belongs to (the web client shows the name and email before it takes a credential from a link)."""
    ctx: AppContext = request.app.state.ctx
    identity = ctx.service(IdentityService)
    principal = await identity.authenticate_bearer(request)
    user = await identity.get_user(principal.user_id)
    return JSONResponse(
        {
            "userId": principal.user_id,
            "deviceId": principal.device_id,
            "isServerOwner": principal.is_server_owner,
            "displayName": user.display_name if user else None,
            "email": user.email if user else None,
        },
        headers={"Cache-Control": "no-store"},
    )


IDENTITY_ROUTES = [
    Route("/auth/pair", failures_limited("pair", pair), methods=["POST"]),
    Route("/auth/me", me, methods=["GET"]),
]
