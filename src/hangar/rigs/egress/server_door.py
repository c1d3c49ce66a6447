"""The server door: a rig's one way to the server's own listener, for a command agent's MCP calls.

The contract keeps the server's listener (RPC, MCP, lanes) out of every rig's reach. A command agent run with an
MCP grant (``hangar.agents.tools.mcp_grant``) needs one thing of it, the MCP endpoint, and inside its enclosure the
host's loopback is not there. While such a run is in the rig, the gate opens one more listener
(``GatePorts.server_door`` on the gate's address) that forwards requests for exactly ``/mcp`` (any query) and
the endpoint's public resource metadata, which an MCP client may read, and refuses every other path with a 403
saying why, logged against the rig as every refusal is. The door adds no authority: the request's bearer
credential is checked by the server as on any other connection, and it is revoked when the run ends.

One request per connection, whatever the server's parser would make of more: the head is read within the
gate's head limit and refused when malformed (a request line other than ``METHOD /path HTTP/1.x``, a header
line that is not ``name: value``, control characters, a body framed by both ``Content-Length`` and
``Transfer-Encoding`` or by a coding other than ``chunked``). It goes on with ``Connection: close``, the
server's own ``Host``, and exactly the body its framing announces; what the program sends after that is read
and dropped, so a pipelined second request never reaches the server. The answer is relayed as it comes, with
no time limit (it may be a long event stream). Headers by which a proxy vouches for a client (``Forwarded``,
``X-Forwarded-*``, ``X-Real-IP``) are dropped: the gate's connection comes from loopback, whose proxy headers
the server's HTTP layer believes.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from hangar.rigs.egress.relay import CHUNK, pump

PATHS = frozenset(("/mcp", "/.well-known/oauth-protected-resource"))
DRAIN_S = 2.0  # how long a refused request's unread bytes are swallowed, so the client reads the refusal

_TOKEN = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_TARGET = re.compile(rb"/[\x21-\x7e]*")  # origin form, printable ASCII; "#" and "%" stay as sent (no decoding)
_VERSIONS = (b"HTTP/1.1", b"HTTP/1.0")
_CONTROL = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f]")
_DIGITS = re.compile(rb"[0-9]{1,15}")
_HEX = re.compile(rb"[0-9A-Fa-f]{1,15}")
_DROPPED = frozenset((b"host", b"connection", b"keep-alive", b"proxy-connection", b"upgrade", b"forwarded",
                      b"x-real-ip"))  # fmt: skip


class Malformed(Exception):
    """A request head or body the door will not pass on; the text says what was wrong."""


@dataclass(frozen=True)
class DoorTarget:
    """The server's listener as the host reaches it, and the Host header it expects."""

    host: str
    port: int
    host_header: str

    @classmethod
    def from_url(cls, url: str) -> DoorTarget:
        parts = urlsplit(url)
        if parts.scheme != "http" or not parts.hostname or parts.port is None:
            raise ValueError(f"the server door leads to a plain http://host:port listener, not {url!r}")
        return cls(parts.hostname, parts.port, parts.netloc)


@dataclass(frozen=True)
class DoorRequest:
    request_line: bytes
    path: str  # the target up to "?", as sent
    headers: tuple[tuple[bytes, bytes], ...]  # as sent, minus the ones the door replaces or drops
    length: int  # the body's Content-Length (0 without one)
    chunked: bool

    def head_for(self, target: DoorTarget) -> bytes:
        lines = [self.request_line, *(name + b": " + value for name, value in self.headers)]
        lines += [b"Host: " + target.host_header.encode("ascii"), b"Connection: close"]
        return b"\r\n".join(lines) + b"\r\n\r\n"


def parse_head(head: bytes) -> DoorRequest:
    """The request in ``head`` (up to and including the blank line), or ``Malformed`` saying why not."""
    lines = head.removesuffix(b"\r\n\r\n").split(b"\r\n")
    parts = lines[0].split(b" ")
    if len(parts) != 3 or not _TOKEN.fullmatch(parts[0]) or parts[2] not in _VERSIONS:
        raise Malformed("the request line is not METHOD /path HTTP/1.1")
    if not _TARGET.fullmatch(parts[1]):
        raise Malformed("the request target is not a path")
    kept: list[tuple[bytes, bytes]] = []
    lengths: list[bytes] = []
    codings: list[bytes] = []
    for line in lines[1:]:
        name, sep, raw = line.partition(b":")
        value = raw.strip(b" \t")
        if not sep or not _TOKEN.fullmatch(name):
            raise Malformed("a header line is not NAME: value")
        if _CONTROL.search(value):
            raise Malformed(f"the {name[:64].decode()} header holds control characters")
        key = name.lower()
        if key == b"content-length":
            lengths.append(value)
        elif key == b"transfer-encoding":
            codings.append(value)
        if key not in _DROPPED and not key.startswith(b"x-forwarded-"):
            kept.append((name, value))
    if lengths and codings:
        raise Malformed("the body is framed by both Content-Length and Transfer-Encoding")
    if len(lengths) > 1 or (lengths and not _DIGITS.fullmatch(lengths[0])):
        raise Malformed("Content-Length is not one decimal number")
    if codings and (len(codings) > 1 or codings[0].lower() != b"chunked"):
        raise Malformed("the only transfer coding passed on is chunked")
    path = parts[1].split(b"?", 1)[0].decode("ascii")
    return DoorRequest(lines[0], path, tuple(kept), int(lengths[0]) if lengths else 0, bool(codings))


async def _copy_exact(reader: asyncio.StreamReader, out: asyncio.StreamWriter, size: int, read_s: float) -> None:
    while size:
        data = await asyncio.wait_for(reader.read(min(size, CHUNK)), read_s)
        if not data:
            raise Malformed("the body ended early")
        out.write(data)
        await out.drain()
        size -= len(data)


async def _copy_chunked(reader: asyncio.StreamReader, out: asyncio.StreamWriter, read_s: float) -> None:
    while True:
        line = await asyncio.wait_for(reader.readuntil(b"\r\n"), read_s)
        size_text = line[:-2].split(b";", 1)[0].strip(b" \t")
        if not _HEX.fullmatch(size_text) or _CONTROL.search(line[:-2]):
            raise Malformed("a chunk does not start with its size")
        out.write(line)
        size = int(size_text, 16)
        if size == 0:
            break
        await _copy_exact(reader, out, size, read_s)
        if await asyncio.wait_for(reader.readexactly(2), read_s) != b"\r\n":
            raise Malformed("a chunk does not end where its size says")
        out.write(b"\r\n")
    while True:  # trailer lines, up to the blank one
        trailer = await asyncio.wait_for(reader.readuntil(b"\r\n"), read_s)
        if _CONTROL.search(trailer[:-2]):
            raise Malformed("a trailer holds control characters")
        out.write(trailer)
        if trailer == b"\r\n":
            return


async def discard(reader: asyncio.StreamReader) -> None:
    """Read and drop until the end of the stream."""
    while await reader.read(CHUNK):
        pass


async def forward(
    request: DoorRequest,
    client: tuple[asyncio.StreamReader, asyncio.StreamWriter],
    upstream: tuple[asyncio.StreamReader, asyncio.StreamWriter],
    target: DoorTarget,
    body_timeout: float,
) -> None:
    """Send ``request`` and its body on, relay the answer back, then close both connections.

    The body is bounded by its framing and each read of it by ``body_timeout``; the answer by nothing. The
    exchange ends when the answer ends, the program goes away (its side's end), or the body breaks."""
    (reader, writer), (up_reader, up_writer) = client, upstream

    async def send() -> None:
        try:
            up_writer.write(request.head_for(target))
            if request.chunked:
                await _copy_chunked(reader, up_writer, body_timeout)
            else:
                await _copy_exact(reader, up_writer, request.length, body_timeout)
            await up_writer.drain()
            await discard(reader)  # anything after the one request stays here
        except (Malformed, asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, OSError):
            pass
        up_writer.close()  # the body broke or the program went away: the server sees the connection end

    sending = asyncio.create_task(send())
    try:
        await pump(up_reader, writer)
    finally:
        sending.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sending
        for w in (writer, up_writer):
            w.close()
            with contextlib.suppress(Exception):
                await w.wait_closed()


async def answer_and_close(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, answer: bytes) -> None:
    """Send a refusal, then swallow what the client still sends for a moment: closing with unread bytes would
    reset the connection and could lose the refusal before the client read it."""
    writer.write(answer)
    with contextlib.suppress(OSError, TimeoutError, asyncio.LimitOverrunError):
        await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
        await asyncio.wait_for(discard(reader), DRAIN_S)
