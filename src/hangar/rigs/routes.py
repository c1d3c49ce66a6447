"""HTTP and WebSocket routes of rigs: the rig hosts' socket, the file lane, the clipboard lane, the live terminal and
the live view."""

from __future__ import annotations

from starlette.routing import BaseRoute, Route, WebSocketRoute

from hangar.rigs.devdomains.crossing import DEV_RELAY_PATH
from hangar.rigs.hosts import wire
from hangar.rigs.hosts.route import rig_host_socket
from hangar.rigs.lanes.clipboard import read_clipboard, write_clipboard
from hangar.rigs.lanes.desktopview import serve_desktop
from hangar.rigs.lanes.devcrossing import dev_relay_socket
from hangar.rigs.lanes.files import drop_files, read_file
from hangar.rigs.lanes.liveview import live_view_lane, register_view
from hangar.rigs.lanes.relay import relayed_http, relayed_socket
from hangar.rigs.lanes.terminal import terminal_lane
from hangar.rigs.model import Surface

register_view(Surface.computer, serve_desktop)  # a desktop's live view rides the browser's lane and wire

RIG_ROUTES: list[BaseRoute] = [
    WebSocketRoute(wire.PATH, rig_host_socket),
    # Each lane is served by the server running its rig: another server relays it there (``lanes.relay``).
    Route("/rig/files/{rig_id}", relayed_http("files", drop_files), methods=["POST"]),
    Route("/rig/files/{rig_id}", relayed_http("files", read_file), methods=["GET"]),
    Route("/rig/clipboard/{rig_id}", relayed_http("files", read_clipboard), methods=["GET"]),
    Route("/rig/clipboard/{rig_id}", relayed_http("files", write_clipboard), methods=["POST"]),
    WebSocketRoute("/rig/terminal/{rig_id}", relayed_socket("terminal", terminal_lane)),
    WebSocketRoute("/rig/live/{rig_id}", relayed_socket("watch", live_view_lane)),
    # A dev domain's target another server runs is reached through it (``devdomains.crossing``).
    WebSocketRoute(DEV_RELAY_PATH, dev_relay_socket),
]
