"""What the rigs' WebSocket lanes (the terminal, the live view) share: who opens the lane, how a fatal error is
told before the socket closes, and the guard that ends an open lane once its person may no longer use it
(credential revoked, membership ended: ``lanes.still_allowed``, re-checked by the server's ``AccessMonitor``).

Authentication: ``Authorization: Bearer`` on the upgrade, or a first text frame ``{"type": "auth", "token":
"<device credential>"}`` for browsers (which cannot set headers on a WebSocket).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
from collections.abc import AsyncIterator

from starlette.websockets import WebSocket

from hangar.core.context import AppContext
from hangar.core.principal import Principal
from hangar.errors import HangarError, Unauthenticated
from hangar.identity import IdentityService
from hangar.rigs.lanes.access import LaneAccess, still_allowed
from hangar.rpc.access import AccessMonitor, Revocable

AUTH_TIMEOUT_S = 10.0


async def credential(ws: WebSocket) -> tuple[Principal, str]:
    """Who opens the lane, and the credential they used (re-checked while the lane is open)."""
    app = ws.app.state.ctx
    scheme, _, token = ws.headers.get("authorization", "").partition(" ")
    if scheme:
        return await app.service(IdentityService).authenticate_bearer(ws), token.strip()
    try:
        first = await asyncio.wait_for(ws.receive_text(), AUTH_TIMEOUT_S)
        frame = json.loads(first)
    except (TimeoutError, ValueError, KeyError):
        raise Unauthenticated("send Authorization: Bearer or a first frame {type: auth, token}") from None
    if not isinstance(frame, dict) or frame.get("type") != "auth" or not isinstance(frame.get("token"), str):
        raise Unauthenticated("the first frame must be {type: auth, token}")
    return await app.service(IdentityService).authenticate(frame["token"]), frame["token"]


async def fail(ws: WebSocket, err: HangarError) -> None:
    """Tell the person why the lane ends, then close it with 4000 + the error's HTTP status."""
    with contextlib.suppress(Exception):
        await ws.send_text(json.dumps({"type": "error", **err.to_dict()}))
        await ws.close(code=4000 + err.http_status, reason=err.code)


@contextlib.asynccontextmanager
async def guarded(app: AppContext, access: LaneAccess, token: str) -> AsyncIterator[Revocable]:
    """The lane's guard: ``ended`` resolves to the error once the lane's person may no longer use it, and
    ``admit`` (before each thing the lane sends) raises it, checked again when authority moved."""
    identity = app.service(IdentityService)
    guard = Revocable(functools.partial(still_allowed, app, access.ws, token), stamp=identity.authority_stamp)
    monitor = app.maybe_service(AccessMonitor)
    if monitor is not None:
        monitor.watch(guard)
    try:
        yield guard
    finally:
        if monitor is not None:
            monitor.forget(guard)
