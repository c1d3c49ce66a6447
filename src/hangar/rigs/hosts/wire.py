"""The rig hosts' wire: what a ``hangar rig-host`` and the server it dials say to each other over one WebSocket
(``/rig-host/connect``), shared by both sides.

The rig host dials out (it needs no inbound port) and authenticates with ``Authorization: Bearer <rig host
credential>``. Then:

- text frames are JSON. The rig host's first is ``{"event": "hello", "memoryBudgetMb": N, "rigs": [ids]}`` (the
  rigs it still runs, after a reconnection); the server answers ``{"event": "welcome", "hostId": ..., "name":
  ...}`` once it took it (or ``{"event": "refused", "message": ...}``). Then the rig host says ``{"event":
  "beat"}`` every ``BEAT_S``, ``{"event": "rigDied", "rig": id}`` when a rig's processes died and ``{"event":
  "ptyEnd", "channel": k}`` when a terminal ended. The server sends requests ``{"id": n, "op": OP, ...}``
  (``OPS``) and the rig host answers each with ``{"re": n, "ok": {...}}`` or ``{"re": n, "error": {"code": ...,
  "message": ...}}`` (codes of ``hangar.errors``); requests are served concurrently, so a long command does not
  hold up a keystroke.
- files travel in answered requests: ``fileWrite`` opens a stream into the rig (a channel), ``fileChunk`` carries
  up to ``FILE_CHUNK`` bytes (base64) and ``fileEnd`` finishes it, answered with the write's outcome;
  ``fileRead`` opens a file of the rig and each ``fileNext`` answers its next chunk (``eof`` at the end),
  ``fileDone`` closing it early. Every chunk waits for its answer, so a slow rig slows its sender.
- binary frames are terminal bytes: a 4-byte big-endian channel number (from ``ptyOpen``) then the bytes, the
  server's keystrokes one way and the shell's output the other.

The server closes the socket with ``CLOSE_REFUSED`` and a reason when the credential is refused or revoked.
"""

from __future__ import annotations

import json
import struct
from typing import Any

from hangar.core.confine import ExecResult
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
MAX_TEXT_FRAME = 8 * 1024 * 1024  # a command's output comes back in one reply

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
    }
)
FILE_CHUNK = 512 * 1024  # bytes of a file per request (base64 in JSON): each one answered, so neither side floods

_ERRORS: dict[str, type[HangarError]] = {
    cls.code: cls for cls in (Unauthenticated, Forbidden, NotFound, Conflict, Refused, Unavailable, Internal)
}


def error_of(body: dict[str, Any]) -> HangarError:
    """The error a reply carries, as the class its code names (``Internal`` for a code not known here)."""
    code, message = str(body.get("code", "internal")), str(body.get("message", "the rig host failed"))
    if code == InvalidArgs.code:
        return InvalidArgs(message)
    return _ERRORS.get(code, Internal)(message)


def dumps(message: dict[str, Any]) -> str:
    return json.dumps(message, separators=(",", ":"))


def frame(channel: int, data: bytes) -> bytes:
    return struct.pack(">I", channel) + data


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


def result_of(body: dict[str, Any]) -> ExecResult:
    return ExecResult(int(body["exitCode"]), str(body["stdout"]), str(body["stderr"]), bool(body["timedOut"]))
