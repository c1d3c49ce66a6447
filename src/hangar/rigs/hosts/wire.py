"""The rig hosts' wire: what a ``hangar rig-host`` and the server it dials say to each other over one WebSocket
(``/rig-host/connect``), shared by both sides.

The rig host dials out (it needs no inbound port) and authenticates with ``Authorization: Bearer <rig host
credential>``. Then:

- text frames are JSON. The rig host's first is ``{"event": "hello", "memoryBudgetMb": N, "rigs": [ids]}`` (the rigs
  it still runs, after a reconnection); the server answers ``{"event": "welcome", "hostId": ..., "name": ...,
  "memoryBudgetMb": N}`` once it took it (the budget it counts: the hello's, at most the credential's maximum;
  ``"capped"`` says why when it is less) (or ``{"event": "refused", "message": ...}``). Then the rig host says
  ``{"event": "beat"}`` every ``BEAT_S``, ``{"event": "rigDied", "rig": id}`` when a rig's processes died and
  ``{"event": "ptyEnd", "channel": k}`` when a terminal ended. The server sends requests ``{"id": n, "op": OP, ...}``
  (``OPS``) and the rig host answers each with ``{"re": n, "ok": {...}}`` or ``{"re": n, "error": {"code": ...,
  "message": ...}}`` (codes of ``hangar.errors``); requests are served concurrently, so a long command does not hold
  up a keystroke.
- files travel in answered requests: ``fileWrite`` opens a stream into the rig (a channel), ``fileChunk`` carries
  up to ``FILE_CHUNK`` bytes (base64) and ``fileEnd`` finishes it, answered with the write's outcome;
  ``fileRead`` opens a file of the rig and each ``fileNext`` answers its next chunk (``eof`` at the end),
  ``fileDone`` closing it early. Every chunk waits for its answer, so a slow rig slows its sender.
- binary frames are terminal bytes: a 4-byte big-endian channel number (from ``ptyOpen``, never 0) then the
  bytes, the server's keystrokes one way and the shell's output the other (at most ``streams.WINDOW`` of it ahead
  of what the server read, which it acknowledges with ``{"event": "ptyAck", "channel": k, "bytes": n}``); or a
  stream lane's bytes (a connection
  into a rig's port, ``streamOpen``; its flow control and events in ``streams``).
- no frame passes ``FRAME_MAX``, the WebSocket message cap of the server's listener (it closes a connection whose
  message is larger, whatever its path): a text message longer than that (an exec answer of several MiB) travels
  as consecutive binary frames on ``PART_CHANNEL`` (channel 0), each the channel number, a byte saying whether it
  is the last, and the next piece of the message's UTF-8 text; nothing else is sent between them. A message is
  at most ``MAX_MESSAGE`` bytes: a rig host answers a request whose answer would be longer with an error saying
  so, and a longer one received ends the link. Terminal bytes are cut to fit too.

The server closes the socket with ``CLOSE_REFUSED`` and a reason when the credential is refused or revoked.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator
from typing import Any

from hangar.core.confine import MAX_OUTPUT, ExecResult
from hangar.errors import (
    Conflict,
    Forbidden,
    HangarError,
    Internal,
    InvalidArgs,
    NotFound,
    Refused,
    Unauthenticated,
    Unavailable,
)

PATH = "/rig-host/connect"
BEAT_S = 2.0  # how often a rig host says it is there
SILENCE_S = 10.0  # a link that said nothing for this long is lost (a host gone without closing its socket)
CLOSE_REFUSED = 4401  # the credential is not (or no longer) accepted; the reason says why
CLOSE_BUSY = 4409  # another rig host holds a live link with this credential: dial again later
# The server's listener caps every WebSocket message at this (``hangar.rpc.endpoint.MAX_FRAME_BYTES``; a unit test
# keeps the two equal): no frame of this link passes it, either way.
FRAME_MAX = 256 * 1024
PART_CHANNEL = 0  # binary frames of this channel carry a long text message's pieces (terminal channels start at 1)
_PART_HEAD = struct.Struct(">IB")  # the channel number, then 1 on a message's last piece (else 0)
# The longest text message, in pieces: an exec answer carries two streams of up to MAX_OUTPUT characters each,
# and JSON escapes some (a control character takes six bytes), so this holds both streams of plain text in full
# and a bounded amount of escaping; what the receiver gathers of one message never grows past it.
MAX_MESSAGE = 3 * MAX_OUTPUT

OPS = frozenset(
    {
        "start",
        "close",
        "exec",
        "park",
        "wake",
        "residentMb",
        "listeningPorts",
        "grantHosts",
        "ptyOpen",
        "ptyResize",
        "ptyClose",
        "fileWrite",
        "fileChunk",
        "fileEnd",
        "fileRead",
        "fileNext",
        "fileDone",
        "streamOpen",
    }
)
# Bytes of a file per request (base64 in JSON, a third more, so a chunk's frame stays under FRAME_MAX): each one
# answered, so neither side floods.
FILE_CHUNK = 128 * 1024

_ERRORS: dict[str, type[HangarError]] = {
    cls.code: cls for cls in (Unauthenticated, Forbidden, NotFound, Conflict, Refused, Unavailable, Internal)
}


def error_of(body: dict[str, Any]) -> HangarError:
    """The error a reply carries, as the class its code names (``Internal`` for a code not known here)."""
    code, message = str(body.get("code", "internal")), str(body.get("message", "the rig host failed"))
    if code == InvalidArgs.code:
        return InvalidArgs(message)
    return _ERRORS.get(code, Internal)(message)


def count_of(body: dict[str, Any], key: str, default: int | None = None) -> int:
    """A whole number of a message from the other side (a channel, a request's id, a byte count), not trusted:
    ``ValueError`` naming it when it is missing, not an integer or negative (the reader ends the link with it)."""
    value = body.get(key, default)
    if type(value) is not int or value < 0:
        raise ValueError(f"{key!r} of a {str(body.get('event') or 'message')[:40]!r} is not a count: {value!r:.40}")
    return value


def dumps(message: dict[str, Any]) -> str:
    return json.dumps(message, separators=(",", ":"))


def frame(channel: int, data: bytes) -> bytes:
    return struct.pack(">I", channel) + data


def terminal_frames(channel: int, data: bytes) -> Iterator[bytes]:
    """``data`` of terminal ``channel`` in frames of at most ``FRAME_MAX`` bytes."""
    step = FRAME_MAX - 4
    for start in range(0, len(data), step):
        yield frame(channel, data[start : start + step])


class MessageTooLong(InvalidArgs):
    pass


def message_frames(text: str) -> Iterator[str | bytes]:
    """The frames ``text`` travels in: itself when it fits in one, else its pieces on ``PART_CHANNEL`` (to be
    sent one after the other with nothing between them). ``MessageTooLong`` past ``MAX_MESSAGE`` bytes."""
    data = text.encode()
    if len(data) <= FRAME_MAX:
        yield text
        return
    if len(data) > MAX_MESSAGE:
        raise MessageTooLong(
            f"a message of {len(data)} bytes is more than the rig host link carries ({MAX_MESSAGE} bytes)"
        )
    step = FRAME_MAX - _PART_HEAD.size
    for start in range(0, len(data), step):
        last = start + step >= len(data)
        yield _PART_HEAD.pack(PART_CHANNEL, int(last)) + data[start : start + step]


class Pieces:
    """Gathers a long text message from its pieces (``message_frames``): ``add`` each binary frame's bytes after
    the channel number; it returns the message once the last piece came. ``MessageTooLong`` when the pieces
    pass ``MAX_MESSAGE`` bytes (what was gathered is dropped)."""

    def __init__(self) -> None:
        self._gathered = bytearray()

    def add(self, data: bytes) -> str | None:
        if not data or data[0] not in (0, 1):
            raise InvalidArgs("a piece of a message must start with its last-piece flag, 0 or 1")
        self._gathered += data[1:]
        if len(self._gathered) > MAX_MESSAGE:
            self._gathered = bytearray()
            raise MessageTooLong(f"a message in pieces passed the {MAX_MESSAGE} bytes the rig host link carries")
        if data[0] == 0:
            return None
        text, self._gathered = self._gathered.decode(), bytearray()
        return text


def unframe(data: bytes) -> tuple[int, bytes]:
    if len(data) < 4:
        raise InvalidArgs("a terminal frame is shorter than its channel number")
    return struct.unpack(">I", data[:4])[0], data[4:]


def result_body(result: ExecResult) -> dict[str, Any]:
    return {
        "exitCode": result.exit_code,
        "stdout": result.stdout,
        "stderr": result.stderr,
        "timedOut": result.timed_out,
    }


def answered_wrongly(op: str, what: str) -> Unavailable:
    """A rig host's answer not of the wire's shape: the request fails, as when the host is away."""
    return Unavailable(f"the rig host answered {op} wrongly: {what}")


def result_of(body: dict[str, Any]) -> ExecResult:
    code, out, err, timed_out = (body.get(k) for k in ("exitCode", "stdout", "stderr", "timedOut"))
    if type(code) is not int or not isinstance(out, str) or not isinstance(err, str) or type(timed_out) is not bool:
        raise answered_wrongly("exec", "an exit code, output or timeout of the wrong kind")
    return ExecResult(code, out, err, timed_out)
