"""The uvicorn protocols every listener runs: HTTP/1.1 on uvicorn's httptools (llhttp) protocol, and WebSocket on its
sans-I/O websockets one, both under the process's ``ConnectionGuard`` (``hangar.server.connections``), plus the
bounds on a request head that llhttp does not keep by itself.

llhttp parses in C but buffers a header line whole, however long, before it hands it over; so the bytes of each
head are counted here, from the socket, before the parser sees them:

- **size**: a request head (request line, header lines and the blank line ending them) of more than
  ``MAX_HEAD_BYTES`` is answered ``431`` and the connection closed, the rest unread;
- **count**: a head with more than ``MAX_HEADERS`` header lines is answered ``431`` and closed;
- **time**: a head must arrive whole within the guard's ``head_timeout`` (``408`` past it, see
  ``hangar.server.connections``), counted from the connection opening for its first head, and from the first byte
  of each later head on a kept-alive connection. Between requests a kept-alive connection may stay idle for
  ``KEEP_ALIVE_S`` (uvicorn's keep-alive timeout): longer than clients keep an idle connection themselves (Node's
  undici 4 s, most others under a minute), so a client retires an idle connection before the server closes it. A
  server closing first races the client's next request onto a closing connection, and a client cannot safely send
  a POST again: an MCP client lost its calls that way on a loaded machine.

To count a head exactly, what arrives is handed to the parser in pieces that end where a head ends (its blank
line) or where a body of known length ends, so the bytes of the next head are never hidden inside a piece. Only a
chunked body's end is not known beforehand: it is handed over in pieces of ``UNKNOWN_END_SLICE`` bytes, and a head
that begins inside such a piece is counted from the piece's start (up to that many bytes more than its size, never
less).

An app may answer GET and HEAD without the ASGI machinery: when it has ``answer_get(scope)`` (the website's
pre-rendered pages, ``hangar.site.app``), the listener calls it as soon as a head is parsed and writes the answer it
returns, the same bytes the ASGI path would send, without a task per request. Only when nothing is in flight on the
connection and its writes are not held back (otherwise the ordinary path queues and waits as it does for any app).
"""

from __future__ import annotations

import asyncio
import urllib.parse
from collections.abc import Callable
from typing import Any

import httptools
import uvicorn
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

from hangar.server.connections import (
    LINGER_MAX,
    LINGER_S,
    REFUSED,
    TOO_SLOW,
    ConnectionGuard,
    closing_answer,
)

KEEP_ALIVE_S = 75  # seconds, as nginx's default: above what clients keep idle connections for
MAX_HEAD_BYTES = 64 * 1024
MAX_HEADERS = 100
HEAD_TOO_LARGE = closing_answer("431 Request Header Fields Too Large", "the request head is too large\n")
TOO_MANY_HEADERS = closing_answer("431 Request Header Fields Too Large", "the request has too many header lines\n")
_BLANK_LINE = b"\r\n\r\n"
# A body whose end is not known beforehand (chunked) is handed over in pieces of at most this many bytes, so a head
# that begins inside one is counted with at most this much of the body before it.
UNKNOWN_END_SLICE = 1024


class GuardedConfig(uvicorn.Config):
    """uvicorn's configuration carrying the guard its protocols answer to."""

    def __init__(self, app: Any, *, guard: ConnectionGuard, **kwargs: Any) -> None:
        super().__init__(app, http=GuardedHttpProtocol, ws=GuardedWebSocketProtocol, **kwargs)
        self.guard = guard


def _guard_of(config: uvicorn.Config) -> ConnectionGuard:
    if not isinstance(config, GuardedConfig):
        raise TypeError("the guarded protocols need a GuardedConfig")
    return config.guard


# ``answer_get``: an ASGI scope to (status, headers with content-length, body); hangar.site.app.SiteApp has it.
AnswerGet = Callable[[dict[str, Any]], tuple[int, tuple[tuple[bytes, bytes], ...], bytes]]
_AT_ONCE_METHODS = (b"GET", b"HEAD")


class _TooManyHeaders(Exception):
    """Raised from the parser's header callback to stop it at the header past ``MAX_HEADERS``."""


class GuardedHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools HTTP/1.1 protocol under the connection caps, the head deadline and the head bounds."""

    def __init__(self, config: uvicorn.Config, *args: Any, **kwargs: Any) -> None:
        super().__init__(config, *args, **kwargs)
        self.guard = _guard_of(config)
        self._admitted = False
        self._head_timer: asyncio.TimerHandle | None = None
        self._linger: asyncio.TimerHandle | None = None
        # Bytes of the request head being awaited or read; None while a request's body is read.
        self._head: int | None = 0
        self._tail = b""  # the head's last bytes so far (its blank line may span two reads)
        self._body_left: int | None = 0  # bytes of a body of known length still to come; None: chunked
        self._header_lines = 0
        self._head_ended = False  # set by the parser when a head is complete (within one piece fed)
        self._begun = False  # set by the parser when a request begins, unset when its head ends
        self._at_once: AnswerGet | None = getattr(self.app, "answer_get", None)
        self._answered = False  # the request being parsed was answered at once (no ASGI cycle)
        self._kept = False  # a request was answered and the connection kept: idle waits are keep-alive's

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if not self.guard.admit(transport):
            self._refuse(transport)
            return
        self._admitted = True
        self._watch_head()

    def _refuse(self, transport: asyncio.Transport) -> None:
        transport.write(REFUSED)
        if self.guard.lingering >= LINGER_MAX or not transport.can_write_eof():
            transport.close()
            return
        self.guard.lingering += 1
        transport.write_eof()
        self._linger = self.loop.call_later(LINGER_S, transport.close)

    def data_received(self, data: bytes) -> None:
        if not self._admitted or self.transport.is_closing():
            return
        self._unset_keepalive_if_required()
        if self._kept and self._head_timer is None and self._waiting_for_head():
            self._arm_head_timer()  # the first bytes of a later head: its deadline runs from here
        pos, size = 0, len(data)
        while pos < size and not self.transport.is_closing():
            if self._head is not None:
                end = self._head_end(data, pos)
                stop = size if end < 0 else end
                if self._head + (stop - pos) > MAX_HEAD_BYTES:
                    self._close_with(HEAD_TOO_LARGE)
                    return
                self._head_ended = False
                if not self._feed(data, pos, stop):
                    return
                if not self._head_ended and self._head is not None:
                    self._head += stop - pos
                    self._tail = (self._tail + data[max(pos, stop - 3) : stop])[-3:]
            else:
                known = self._body_left is not None and self._body_left > 0
                stop = min(size, pos + (self._body_left if known and self._body_left else UNKNOWN_END_SLICE))
                self._begun = self._head_ended = False
                if not self._feed(data, pos, stop):
                    return
                if known and self._body_left and not self._head_ended:
                    self._body_left -= stop - pos
                if self._begun and self._head is not None:
                    # A head began (and did not end) inside a piece of a chunked body: count the whole piece.
                    self._head = stop - pos
                    self._tail = data[max(pos, stop - 3) : stop]
                    if self._head > MAX_HEAD_BYTES:
                        self._close_with(HEAD_TOO_LARGE)
                        return
            pos = stop
        self._watch_head()

    def _head_end(self, data: bytes, pos: int) -> int:
        """Where in ``data`` (from ``pos``) the awaited head's blank line ends, or -1 when it is not in ``data``."""
        if self._tail:
            joined = self._tail + data[pos : pos + 3]
            found = joined.find(_BLANK_LINE)
            if found >= 0:
                return pos + found + 4 - len(self._tail)
        found = data.find(_BLANK_LINE, pos)
        return -1 if found < 0 else found + 4

    def _feed(self, data: bytes, pos: int, stop: int) -> bool:
        """Hand ``data[pos:stop]`` to the parser; False when the connection is done with it (refused, upgraded)."""
        try:
            self.parser.feed_data(data if pos == 0 and stop == len(data) else memoryview(data)[pos:stop])
        except httptools.HttpParserUpgrade:
            self._head = None
            if self._should_upgrade():
                self.handle_websocket_upgrade()
            else:
                self._unsupported_upgrade_warning()
            return False
        except httptools.HttpParserError:
            if self._header_lines > MAX_HEADERS:
                self._close_with(TOO_MANY_HEADERS)
            else:
                msg = "Invalid HTTP request received."
                self.logger.warning(msg)
                self.send_400_response(msg)
            return False
        return True

    def _close_with(self, answer: bytes) -> None:
        self._stop_head_timer()
        self.transport.write(answer)
        self.transport.close()

    # Parser callbacks (uvicorn's, plus the counting).

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._header_lines = 0
        self._begun = True
        self._answered = False

    def on_header(self, name: bytes, value: bytes) -> None:
        self._header_lines += 1
        if self._header_lines > MAX_HEADERS:
            raise _TooManyHeaders
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._head_ended = True
        self._begun = False
        self._head = None
        self._tail = b""
        self._body_left = 0
        for name, value in self.headers:
            if name == b"transfer-encoding":
                self._body_left = None
                break
            if name == b"content-length":
                self._body_left = int(value) if value.isdigit() else 0  # llhttp refuses a malformed one itself
        if self._at_once is not None and self._answer_at_once(self._at_once):
            return
        super().on_headers_complete()

    def _answer_at_once(self, answer_get: AnswerGet) -> bool:
        """Answer a GET or HEAD through the app's ``answer_get``; False to leave it to the ASGI path."""
        method = self.parser.get_method()
        in_flight = self.cycle is not None and not self.cycle.response_complete
        if method not in _AT_ONCE_METHODS or in_flight or self.pipeline or self.flow.write_paused:
            return False
        if self.parser.should_upgrade():
            return False
        parsed = httptools.parse_url(self.url)
        raw_path = parsed.path
        path = raw_path.decode("ascii")
        if "%" in path:
            path = urllib.parse.unquote(path)
        http_version = self.parser.get_http_version()
        scope = self.scope
        scope["method"] = method.decode("ascii")
        if http_version != "1.1":
            scope["http_version"] = http_version
        scope["path"] = self.root_path + path
        scope["raw_path"] = self.root_path.encode("ascii") + raw_path
        scope["query_string"] = parsed.query or b""
        status, headers, body = answer_get(dict(scope))
        keep_alive = http_version != "1.0" and self.parser.should_keep_alive()
        content = [STATUS_LINE[status]]
        for name, value in self.server_state.default_headers:
            content += (name, b": ", value, b"\r\n")
        for name, value in headers:
            content += (name, b": ", value, b"\r\n")
        if not keep_alive:
            content.append(b"connection: close\r\n")
        content += (b"\r\n", body)
        self.transport.write(b"".join(content))
        self._answered = True
        self.server_state.total_requests += 1
        if not keep_alive:
            self.transport.close()
        else:
            self._unset_keepalive_if_required()  # a request before it in the same read armed one
            self.timeout_keep_alive_task = self.loop.call_later(
                self.timeout_keep_alive, self.timeout_keep_alive_handler
            )
        return True

    def on_body(self, body: bytes) -> None:
        if not self._answered:
            super().on_body(body)

    def on_message_complete(self) -> None:
        if not self._answered:
            super().on_message_complete()
        self._head = 0
        self._tail = b""
        if self._answered:  # answered at once: the wait for the next head begins now
            self._kept = True
            self._watch_head()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._kept = True
        self._watch_head()

    def handle_websocket_upgrade(self) -> None:
        # The WebSocket protocol takes the transport (and its place under the caps) from here.
        self._stop_head_timer()
        super().handle_websocket_upgrade()

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        self._stop_head_timer()
        if self._linger is not None:
            self._linger.cancel()
            self._linger = None
            self.guard.lingering -= 1
        if self.transport is not None:
            self.guard.release(self.transport)

    # The head deadline.

    def _waiting_for_head(self) -> bool:
        in_flight = self.cycle is not None and not self.cycle.response_complete
        return self._head is not None and not in_flight and not self.pipeline

    def _watch_head(self) -> None:
        """A head is awaited: make sure its deadline runs, from when the wait began on a new connection or from
        the head's first byte on a kept one (idle before it, the connection is keep-alive's). Otherwise: none."""
        if self.transport.is_closing() or not self._waiting_for_head():
            self._stop_head_timer()
        elif self._head_timer is None and (not self._kept or self._head):
            self._arm_head_timer()

    def _arm_head_timer(self) -> None:
        self._head_timer = self.loop.call_later(self.guard.limits.head_timeout, self._head_too_slow)

    def _stop_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_too_slow(self) -> None:
        self._head_timer = None
        if self.transport.is_closing() or not self._waiting_for_head():
            return
        if self._head:
            self.guard.slow_head(self.client[0] if self.client else "")
            self.transport.write(TOO_SLOW)
        self.transport.close()


class GuardedWebSocketProtocol(WebSocketsSansIOProtocol):
    """uvicorn's WebSocket protocol; gives the connection's place under the caps back when it closes."""

    def __init__(self, config: uvicorn.Config, *args: Any, **kwargs: Any) -> None:
        super().__init__(config, *args, **kwargs)
        self.guard = _guard_of(config)

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        if self.transport is not None:
            self.guard.release(self.transport)
