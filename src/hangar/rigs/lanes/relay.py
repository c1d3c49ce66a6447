"""A rig's lanes asked of a server that does not run the rig: relayed to the server that does.

A person's client reaches whichever server its balancer chose; the rig's lanes (files, clipboard, terminal, live
view) need the rig's live state, which is in the one process running it (``lifecycle.holder``). So a lane request
for a rig another server runs is relayed there whole: the HTTP request streamed both ways, or the WebSocket with
every frame and its close passed on, carrying the person's own headers (their credential, or the first frame
that carries it). The holder checks the lane as for any of its own (the signature, the credential, the
membership, the control holder, the read-only mode, at each frame) and ends it when access ends; this server only
carries bytes, so it grants nothing a direct request to the holder would not.

Relayed only when the lane's signature is good and names a rig whose live row names another server; anything else
is served here, which answers as before (a bad signature, a closed rig). A relayed request says so
(``RELAY_HEADER``) and is never relayed again, so a row naming the wrong server ends in an error, not a loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

import httpx
import websockets
from starlette.background import BackgroundTask
from starlette.requests import HTTPConnection, Request
from starlette.responses import Response, StreamingResponse
from starlette.websockets import WebSocket, WebSocketDisconnect

from hangar.core.context import AppContext
from hangar.errors import Elsewhere, HangarError
from hangar.httpkit.tls import client_tls
from hangar.rigs.lanes.signing import Lane, LaneSigner
from hangar.rigs.lanes.socketlane import fail
from hangar.rigs.lifecycle.holder import refuse_if_elsewhere
from hangar.rigs.lifecycle.manager import RigManager
from hangar.rpc.relay import RELAY_HEADER, RELAY_TIMEOUT, open_socket, unreachable

log = logging.getLogger(__name__)

# Headers that belong to one hop (RFC 9110 section 7.6.1) or that the next hop sets for itself.
HOP_HEADERS = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
        RELAY_HEADER,
    }
)
# The WebSocket handshake's own headers, which the relay's client makes afresh.
HANDSHAKE_HEADERS = frozenset(
    {"sec-websocket-key", "sec-websocket-version", "sec-websocket-extensions", "sec-websocket-protocol"}
)
# A lane's frames are the listener's at most (``hangar.rpc.endpoint.MAX_FRAME_BYTES``) one way and a screenshot
# the other: the relay holds no more than one frame of either at a time.
MAX_RELAYED_FRAME = 64 * 1024 * 1024

# Close codes for reporting only (no code given, the peer vanished, a TLS failure): never sent in a close frame.
UNSENDABLE_CODES = frozenset({1005, 1006, 1015})

HttpLane = Callable[[Request], Awaitable[Response]]
SocketLane = Callable[[WebSocket], Awaitable[None]]


async def holder_of(conn: HTTPConnection, lane: Lane) -> Elsewhere | None:
    """Where a lane request (``conn``: a request or a socket) is to be served: ``Elsewhere`` naming the server
    running its rig, or None for here."""
    app: AppContext = conn.app.state.ctx
    rig_id = conn.path_params["rig_id"]
    if RELAY_HEADER in conn.headers:
        return None
    manager = app.maybe_service(RigManager)
    if manager is None:
        return None
    try:
        grant = LaneSigner(app.secrets, app.clock).verify(conn.query_params.get("sig"), lane, rig_id)
    except HangarError:
        return None  # served here, which says what is wrong with it
    if manager.rigs.find(grant.workspace_id, rig_id) is not None:
        return None
    rec = await manager.store.get(grant.workspace_id, rig_id)
    if rec is None:
        return None
    try:
        refuse_if_elsewhere(rec, app.settings.serving_origin)
    except Elsewhere as moved:
        return moved
    except HangarError:
        return None
    return None


def _headers(items: list[tuple[str, str]], skip: frozenset[str]) -> list[tuple[str, str]]:
    return [(k, v) for k, v in items if k.lower() not in skip]


def _relayed_headers(conn: HTTPConnection, skip: frozenset[str]) -> list[tuple[str, str]]:
    """The person's headers for the holder, saying it is relayed and whose it is: ``X-Forwarded-For`` names the
    client as this server determined it (its own trusted proxies applied), which the holder honours when it lists
    this server as a trusted proxy, so its per-address caps count the person, not this server."""
    headers = _headers(conn.headers.items(), skip | {"x-forwarded-for"})
    headers.append((RELAY_HEADER, "lane"))
    if conn.client is not None:
        headers.append(("x-forwarded-for", conn.client.host))
    return headers


def relayed_http(lane: Lane, endpoint: HttpLane) -> HttpLane:
    """``endpoint`` for the rigs this server runs; the others' requests relayed to their server."""

    async def serve(request: Request) -> Response:
        moved = await holder_of(request, lane)
        return await (endpoint(request) if moved is None else _relay_http(request, moved))

    return serve


async def _relay_http(request: Request, moved: Elsewhere) -> Response:
    headers = _relayed_headers(request, HOP_HEADERS)
    client = httpx.AsyncClient(verify=client_tls(), timeout=RELAY_TIMEOUT)
    has_body = request.method not in ("GET", "HEAD")
    upstream = client.build_request(
        request.method,
        moved.origin + request.url.path,
        params=request.url.query,
        headers=headers,
        content=request.stream() if has_body else None,
    )
    try:
        reply = await client.send(upstream, stream=True)
    except httpx.HTTPError as exc:
        await client.aclose()
        err = unreachable(moved, exc)
        return Response(err.message, status_code=err.http_status)

    async def done() -> None:
        await reply.aclose()
        await client.aclose()

    kept = _headers(list(reply.headers.multi_items()), HOP_HEADERS - {"content-length"})
    response = StreamingResponse(reply.aiter_raw(), status_code=reply.status_code, background=BackgroundTask(done))
    response.raw_headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in kept]
    return response


def relayed_socket(lane: Lane, endpoint: SocketLane) -> SocketLane:
    """``endpoint`` for the rigs this server runs; the others' sockets relayed to their server."""

    async def serve(ws: WebSocket) -> None:
        moved = await holder_of(ws, lane)
        await (endpoint(ws) if moved is None else _relay_socket(ws, moved))

    return serve


async def _relay_socket(ws: WebSocket, moved: Elsewhere) -> None:
    rig_id = ws.path_params["rig_id"]
    headers = _relayed_headers(ws, HOP_HEADERS | HANDSHAKE_HEADERS)
    path = ws.url.path + (f"?{ws.url.query}" if ws.url.query else "")
    try:
        upstream = await open_socket(moved, path, headers, MAX_RELAYED_FRAME)
    except HangarError as err:
        await ws.accept()
        await fail(ws, err)
        return
    async with upstream:
        await ws.accept()
        inward = asyncio.create_task(_inward(ws, upstream), name=f"rigs:relay-in:{rig_id}")
        try:
            await _outward(upstream, ws)
        finally:
            inward.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await inward


async def _inward(ws: WebSocket, upstream: websockets.ClientConnection) -> None:
    """The person's frames to the holder; their close closes it."""
    try:
        while True:
            message = await ws.receive()
            if message["type"] == "websocket.disconnect":
                code = int(message.get("code") or 1000)
                await upstream.close(code=1000 if code in UNSENDABLE_CODES else code)
                return
            if message.get("bytes") is not None:
                await upstream.send(message["bytes"])
            elif message.get("text") is not None:
                await upstream.send(message["text"])
    except (WebSocketDisconnect, websockets.ConnectionClosed):
        await upstream.close()


async def _outward(upstream: websockets.ClientConnection, ws: WebSocket) -> None:
    """The holder's frames to the person; its close (code and reason) closes theirs."""
    try:
        async for message in upstream:
            if isinstance(message, bytes):
                await ws.send_bytes(message)
            else:
                await ws.send_text(message)
    except websockets.ConnectionClosed:
        pass
    except (WebSocketDisconnect, RuntimeError):
        return  # the person left first
    code = upstream.close_code or 1000
    code = 1011 if code == 1006 else 1000 if code in UNSENDABLE_CODES else code
    with contextlib.suppress(Exception):
        await ws.close(code=code, reason=upstream.close_reason or "")
