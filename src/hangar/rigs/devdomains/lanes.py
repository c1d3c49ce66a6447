"""A rig's dev-domain lanes: HTTP on its loopback port 80 and HTTPS on 443, routing each connection by name to a
guest port of a rig of the same space.

The listeners live in the rig's own network (``RigNetwork.serve_loopback``: made by the host, on ports the rig user
cannot take first), and its resolver answers the space's dev domains with ``127.0.0.1`` (``set_local_names``), so
``http://app.test/`` typed in the rig lands here; loopback traffic never meets the egress rules. Everything else
runs on the host:

- HTTP: read the request head, take the name from ``Host``, connect to the target through the target rig's
  ``connect``, send the head rewritten to one request per connection (the name is decided once per connection, as
  the egress gate does), then relay both ways. WebSocket upgrades pass untouched (dev servers' live reload).
- HTTPS: terminate TLS here with the space's leaf (the CA that signed it is trusted by browser rigs only; its key
  never enters a rig), ALPN ``http/1.1`` only, route by the SNI, relay the plaintext.

A name that routes nowhere gets a small page saying why (404: no such dev domain in this space; 502: its rig or
port is not there) rather than a reset connection. ``DevLanes`` knows nothing of the manager: it is handed a
``Route`` (name -> an open connection; ``LaneMiss``, or a ``HangarError`` of the target's ``connect``) and, when
there is an HTTPS lane, the current TLS context.
Any rig whose ``RigNetwork`` implements ``serve_loopback`` can carry lanes.
"""

from __future__ import annotations

import asyncio
import html
import logging
import ssl
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from hangar.errors import HangarError
from hangar.rigs.backends.capabilities import RigNetwork
from hangar.rigs.egress.http_head import host_header, one_request
from hangar.rigs.egress.relay import relay

log = logging.getLogger(__name__)

HTTP_PORT = 80
HTTPS_PORT = 443
READ_TIMEOUT_S = 10.0
HANDSHAKE_TIMEOUT_S = 10.0

Streams = tuple[asyncio.StreamReader, asyncio.StreamWriter]


class LaneMiss(Exception):
    """Why a name routes nowhere, as the HTTP status and sentence its page shows."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


Route = Callable[[str], Awaitable[Streams]]
TlsContext = Callable[[], ssl.SSLContext]

_REASONS = {400: "Bad Request", 404: "Not Found", 421: "Misdirected Request", 431: "Request Header Fields Too Large",
            502: "Bad Gateway"}  # fmt: skip


def lane_page(status: int, message: str) -> bytes:
    """A complete small HTML answer saying why, ending the connection (shown in the rig's browser)."""
    title = f"{status} {_REASONS.get(status, 'Error')}"
    body = (
        f"<!doctype html><meta charset=utf-8><title>{title}</title>"
        f"<h1>{title}</h1><p>{html.escape(message)}</p><p><small>Hangar dev-domain lane</small></p>\n"
    ).encode()
    head = (
        f"HTTP/1.1 {title}\r\nContent-Type: text/html; charset=utf-8\r\nCache-Control: no-store\r\n"
        f"Connection: close\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


# The name a TLS client asked for (SNI), by connection: Python's server side does not expose it otherwise.
_server_names: weakref.WeakKeyDictionary[ssl.SSLObject | ssl.SSLSocket, str] = weakref.WeakKeyDictionary()


def _remember_name(conn: ssl.SSLObject | ssl.SSLSocket, name: str | None, _context: ssl.SSLContext) -> None:
    if name is not None:
        _server_names[conn] = name.lower()


@dataclass(frozen=True)
class LaneStatus:
    http: bool
    https: bool
    https_reason: str | None  # why there is no HTTPS lane, when there is none


class DevLanes:
    def __init__(self, route: Route, tls: TlsContext | None, https_reason: str | None = None) -> None:
        self._route = route
        self._tls = tls
        self._https_reason = https_reason

    async def start(self, handle: RigNetwork) -> LaneStatus:
        """Open the lanes on ``handle``'s loopback: HTTP always, HTTPS when there is a TLS context to serve."""
        await handle.serve_loopback(HTTP_PORT, self._http)
        if self._tls is not None:
            await handle.serve_loopback(HTTPS_PORT, self._https)
        return LaneStatus(http=True, https=self._tls is not None, https_reason=self._https_reason)

    async def _open(self, name: str, writer: asyncio.StreamWriter) -> Streams | None:
        try:
            return await self._route(name)
        except LaneMiss as miss:
            status, message = miss.status, miss.message
        except HangarError as exc:  # the target is there but cannot be reached (nothing listens, rig gone)
            status, message = 502, f"{name} cannot be reached: {exc.message}."
        writer.write(lane_page(status, message))
        await writer.drain()
        return None

    async def _http(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), READ_TIMEOUT_S)
        except asyncio.LimitOverrunError:
            writer.write(lane_page(431, "The request head is too large."))
            return
        host = host_header(head)
        if host is None:
            writer.write(lane_page(400, "A Host header naming the dev domain is required."))
            return
        name, _, port = host.partition(":")
        if port not in ("", str(HTTP_PORT)):
            writer.write(lane_page(404, f"Dev domains are served on port {HTTP_PORT} (and {HTTPS_PORT}), not {port}."))
            return
        target = await self._open(name, writer)
        if target is not None:
            target[1].write(one_request(head))
            await relay((reader, writer), target)

    async def _https(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        assert self._tls is not None
        context = self._tls()  # the leaf as issued now: it follows the space's names without a restart
        context.sni_callback = _remember_name
        try:
            await writer.start_tls(context, ssl_handshake_timeout=HANDSHAKE_TIMEOUT_S)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise  # the lane itself is closing
            return  # asyncio reports a failed handshake (the client refused our leaf) this way
        except (ssl.SSLError, ConnectionError, TimeoutError):
            return
        name = _server_names.get(writer.get_extra_info("ssl_object"))
        if name is None:
            writer.write(lane_page(421, "The TLS client named no server (SNI), so no dev domain can be chosen."))
            return
        target = await self._open(name, writer)
        if target is not None:
            await relay((reader, writer), target)
