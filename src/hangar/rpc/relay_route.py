"""The holder's side of a relayed call (``hangar.rpc.relay``): ``POST /internal/relay/op`` from another server of
this installation, carrying the caller's credential (or the principal that server vouches for), the op, its
arguments and the door they came through."""

from __future__ import annotations

import json

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from hangar.errors import HangarError, InvalidArgs, UnknownOp
from hangar.httpkit.requests import bearer_token
from hangar.rpc.dispatcher import Dispatcher
from hangar.rpc.endpoint import MAX_FRAME_BYTES
from hangar.rpc.relay import (
    RELAY_HEADER,
    VOUCHED_DOORS,
    RelayTokens,
    principal_of_wire,
    vouched_target,
)

# A relayed call is one of the socket's frames, with a little room for its envelope.
MAX_RELAY_BYTES = MAX_FRAME_BYTES + 1024
# The doors a relayed call may name (its audit rows record it): those that carry a caller's own credential.
RELAYED_DOORS = frozenset({"socket", "mcp"})


async def relayed_op(request: Request) -> Response:
    """``POST RELAY_PATH``: a call another server relayed here. Errors travel in the body (HTTP 200), as a
    socket's error frame would; only a request that is not a server's is refused by status."""
    dispatcher: Dispatcher = request.app.state.dispatcher
    app = dispatcher.app
    try:
        size = int(request.headers.get("content-length", "-1"))
        if not 0 <= size <= MAX_RELAY_BYTES:
            raise InvalidArgs(f"a relayed call is at most {MAX_RELAY_BYTES} bytes, with its length", field="body")
        frame = json.loads(await request.body())
        op = frame.get("op") if isinstance(frame, dict) else None
        if not isinstance(op, str):
            raise InvalidArgs("a relayed call names its op", field="op")
        vouched = frame.get("principal")  # a caller the relaying server vouches for, or None: its credential
        target = f"op:{op}" if vouched is None else vouched_target(op, vouched)
        RelayTokens(app.secrets, app.clock).verify(request.headers.get(RELAY_HEADER), target)
    except HangarError as err:
        return JSONResponse({"ok": False, "error": err.to_dict()}, status_code=err.http_status)
    except ValueError:
        return JSONResponse({"ok": False, "error": InvalidArgs("the body is not JSON").to_dict()}, status_code=400)
    try:
        spec = dispatcher.registry.get(op)
        if spec is None or spec.kind == "watch":
            raise UnknownOp(f"there is no op named {op!r} to relay")
        door = frame.get("door")
        doors = RELAYED_DOORS if vouched is None else VOUCHED_DOORS
        if door not in doors:
            raise InvalidArgs(f"door must be one of {sorted(doors)}", field="door")
        args = frame.get("args")
        if not isinstance(args, dict):
            raise InvalidArgs("args must be a JSON object", field="args")
        if vouched is None:
            credential, principal = bearer_token(request.headers.get("authorization")) or "", None
        else:
            credential, principal = "", principal_of_wire(vouched)
        approved = frame.get("approved") is True
        ctx, parsed = await dispatcher.prepare(
            credential, None, spec, args, door=door, principal=principal, relayed=True, approved=approved
        )
        result = await dispatcher.call(ctx, parsed)
    except HangarError as err:
        return JSONResponse({"ok": False, "error": err.to_dict()})
    return JSONResponse({"ok": True, "result": result})
