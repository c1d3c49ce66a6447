"""HTTP and WebSocket routes of rigs: the file lane and the live terminal lane."""

from __future__ import annotations

from starlette.routing import BaseRoute, Route, WebSocketRoute

from hangar.rigs.files import drop_files, read_file
from hangar.rigs.terminal import terminal_lane

RIG_ROUTES: list[BaseRoute] = [
    Route("/rig/files/{rig_id}", drop_files, methods=["POST"]),
    Route("/rig/files/{rig_id}", read_file, methods=["GET"]),
    WebSocketRoute("/rig/terminal/{rig_id}", terminal_lane),
]
