"""The RPC bench's peer: a minimal WebSocket endpoint on the server's own stack (Starlette behind the same uvicorn
listener, guard and settings, on uvloop) that answers each request frame with a reply frame of the same shape as
the server's, without any of the server's work. ``bench_rpc.py`` runs it beside ``hangar serve``.

Run: .venv/bin/python bench/rpc_echo.py REPLY_RESULT_JSON   (prints ``server: http://...`` once listening)
"""

from __future__ import annotations

import json
import sys
from typing import Any

from starlette.applications import Starlette
from starlette.routing import WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from hangar.server.connections import ConnectionGuard, ConnectionLimits
from hangar.server.listeners import Listener, bind_port, run_listeners


def echo_app(result: Any) -> Starlette:
    async def rpc(ws: WebSocket) -> None:
        await ws.accept()
        try:
            while True:
                frame = json.loads(await ws.receive_text())
                reply = {"id": frame["id"], "ok": True, "result": result}
                await ws.send_text(json.dumps(reply, separators=(",", ":")))
        except WebSocketDisconnect:
            pass

    return Starlette(routes=[WebSocketRoute("/rpc", rpc)])


def main() -> None:
    result = json.loads(sys.argv[1])
    guard = ConnectionGuard(ConnectionLimits(total=1024, per_address=1024, head_timeout=10.0))
    sockets = bind_port("127.0.0.1", 0)
    port = sockets[0].getsockname()[1]
    run_listeners([Listener("server", echo_app(result), "127.0.0.1", port, guard, sockets=sockets)])


if __name__ == "__main__":
    main()
