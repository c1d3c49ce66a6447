"""The holder's side of dev-domain traffic crossing servers (``crossing``): ``DEV_RELAY_PATH``, asked by another
server of this installation for a connection to a name of a space, its token bound to exactly that."""

from __future__ import annotations

import contextlib

from starlette.websockets import WebSocket, WebSocketDisconnect

from hangar.core.context import AppContext
from hangar.errors import HangarError
from hangar.rigs.devdomains.crossing import MISS_BASE, OPEN, Frame, join, token_target
from hangar.rigs.devdomains.lanes import LaneMiss
from hangar.rigs.lifecycle.manager import RigManager
from hangar.rpc.relay import RELAY_HEADER, RelayTokens

REASON_MAX = 120  # a close frame's reason is at most 123 bytes


def _reason(text: str) -> str:
    return text.encode()[:REASON_MAX].decode(errors="ignore")


async def dev_relay_socket(sock: WebSocket) -> None:
    app: AppContext = sock.app.state.ctx
    ws, space_id, name = (sock.query_params.get(k, "") for k in ("ws", "space", "name"))
    # Accepted before anything is checked: a socket closed before its handshake is a bare HTTP 403, which would
    # lose the close code that says what went wrong.
    await sock.accept()
    try:
        RelayTokens(app.secrets, app.clock).verify(sock.headers.get(RELAY_HEADER), token_target(ws, space_id, name))
        manager = app.maybe_service(RigManager)
        if manager is None:
            raise LaneMiss(502, "That server runs no rigs.")
        target = await manager.dev.route(ws, space_id, name, relayed=True)
    except LaneMiss as miss:
        await sock.close(code=MISS_BASE + miss.status, reason=_reason(miss.message))
        return
    except HangarError as exc:  # a token that is not good for this (403), or the target cannot be reached
        if exc.http_status == 403:
            await sock.close(code=4403, reason=_reason(exc.message))
        else:
            await sock.close(code=MISS_BASE + 502, reason=_reason(f"{name} cannot be reached: {exc.message}."))
        return
    await sock.send_text(OPEN)

    async def send(frame: bytes | str) -> None:
        await (sock.send_bytes(frame) if isinstance(frame, bytes) else sock.send_text(frame))

    async def next_frame() -> Frame:
        try:
            message = await sock.receive()
        except WebSocketDisconnect:
            return None
        if message["type"] == "websocket.disconnect":
            return None
        return message.get("bytes") if message.get("bytes") is not None else message.get("text")

    try:
        await join(target, send, next_frame)
    finally:
        with contextlib.suppress(RuntimeError):  # closed already
            await sock.close()
