"""A guest-agent client: qemu-guest-agent's JSON protocol over the VM's virtio-serial port, seen on the host as a
unix socket QEMU listens on. Our own few lines of asyncio, like the QMP client beside it.

The agent's protocol has no greeting and no request ids, and the host side of the port accepts a connection
before the agent inside has started (what is written waits in the port until it reads). So a session begins, and
begins again after any answer that did not come, with ``guest-sync-delimited``: a 0xFF byte that resets the
agent's parser, then the sync command with a fresh random id; the agent answers with 0xFF and the id, and every
line before that answer (stale answers of an earlier attempt) is dropped. After that, commands go one at a time
and each next line is its answer.

``wait_ready`` repeats the sync until a deadline: a guest whose agent never answers fails with ``Unavailable``
saying so, it is never waited for forever. ``run`` is ``guest-exec`` with its output captured, polled with
``guest-exec-status`` until it exits or its deadline passes (then it is killed in the guest).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hangar.errors import HangarError, Unavailable
from hangar.rigs.backends.fullvm.qmp import open_socket

LINE_LIMIT = 64 << 20  # guest-exec-status carries captured output in base64 (a screenshot is several MB)
# Every other answer (a sync, a ping, a pid) is small: a longer line is the guest's misbehaviour, refused before
# it is parsed.
SHORT_LINE_LIMIT = 64 << 10
_LONG_ANSWERS = frozenset({"guest-exec-status"})
COMMAND_TIMEOUT_S = 30.0
SYNC_ATTEMPT_S = 2.0  # one sync attempt; a guest still booting is asked again
_DELIMITER = b"\xff"
_POLL_FIRST_S = 0.02
_POLL_MAX_S = 0.25


class GuestAgentError(HangarError):
    """The guest agent answered a command with an error."""

    def __init__(self, command: str, error: dict[str, Any]) -> None:
        super().__init__(
            f"the guest agent refused {command}: {str(error.get('desc', error.get('class', 'error')))[:200]}"
        )


def _wrongly(command: str, what: str) -> Unavailable:
    """The guest (which runs code of anyone's) answered out of the protocol: the rig's agent is not usable."""
    return Unavailable(f"the guest agent answered {command} wrongly: {what}")


@dataclass(frozen=True)
class ExecResult:
    exit_code: int
    stdout: bytes
    stderr: bytes
    truncated: bool  # the agent cut the output (it keeps at most 16 MB of each stream)


class GuestAgentClient:
    """``async with await GuestAgentClient.connect(path)``; then ``wait_ready`` before the first command."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer
        self._lock = asyncio.Lock()
        self._synced = False

    @classmethod
    async def connect(cls, path: Path, *, timeout_s: float = COMMAND_TIMEOUT_S) -> GuestAgentClient:
        return cls(*await open_socket(path, "guest agent", LINE_LIMIT, timeout_s))

    async def __aenter__(self) -> GuestAgentClient:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.aclose()

    async def wait_ready(self, deadline_s: float) -> float:
        """Sync with the agent and ``guest-ping`` it, trying until ``deadline_s`` has passed; returns the seconds
        it took. ``Unavailable`` when the agent never answered."""
        started = time.monotonic()
        async with self._lock:
            while True:
                left = deadline_s - (time.monotonic() - started)
                if left <= 0:
                    raise Unavailable(f"the guest agent did not answer guest-ping within {deadline_s:g} s")
                try:
                    await self._sync(min(SYNC_ATTEMPT_S, left))
                    await self._command("guest-ping", None, max(left, 0.1))
                    return time.monotonic() - started
                except TimeoutError:
                    self._synced = False
                except Unavailable:
                    raise
                await asyncio.sleep(0)

    async def execute(
        self, command: str, arguments: dict[str, Any] | None = None, *, timeout_s: float = COMMAND_TIMEOUT_S
    ) -> Any:
        """Run ``command`` and return its ``return`` value; ``GuestAgentError`` when the agent refuses it."""
        async with self._lock:
            try:
                if not self._synced:
                    await self._sync(min(SYNC_ATTEMPT_S * 2, timeout_s))
                return await self._command(command, arguments, timeout_s)
            except TimeoutError:
                self._synced = False  # its answer may still come: the next command syncs past it
                raise Unavailable(f"the guest agent did not answer {command} within {timeout_s:g} s") from None

    async def ping(self, *, timeout_s: float = COMMAND_TIMEOUT_S) -> None:
        await self.execute("guest-ping", timeout_s=timeout_s)

    async def spawn(self, argv: list[str], *, env: list[str] | None = None) -> int:
        """Start ``argv`` in the guest and leave it running (its output goes nowhere); returns its guest pid."""
        arguments: dict[str, Any] = {"path": argv[0], "arg": argv[1:], "capture-output": False}
        if env:
            arguments["env"] = env
        return _pid_of(await self.execute("guest-exec", arguments))

    async def run(
        self,
        argv: list[str],
        *,
        stdin: bytes | None = None,
        env: list[str] | None = None,
        timeout_s: float = COMMAND_TIMEOUT_S,
    ) -> ExecResult:
        """Run ``argv`` in the guest (no shell), its output captured; killed in the guest past ``timeout_s``.
        ``env`` (``NAME=value``) replaces the agent's environment for it."""
        arguments: dict[str, Any] = {"path": argv[0], "arg": argv[1:], "capture-output": True}
        if env:
            arguments["env"] = env
        if stdin is not None:
            arguments["input-data"] = base64.b64encode(stdin).decode()
        started = time.monotonic()
        pid = _pid_of(await self.execute("guest-exec", arguments))
        pause = _POLL_FIRST_S
        while True:
            status = await self.execute("guest-exec-status", {"pid": pid})
            if not isinstance(status, dict):
                raise _wrongly("guest-exec-status", "not an object")
            if status.get("exited"):
                return _result_of(status)
            if time.monotonic() - started > timeout_s:
                with contextlib.suppress(HangarError):
                    await self.execute("guest-exec", {"path": "/bin/kill", "arg": ["-KILL", str(pid)]})
                raise Unavailable(f"{argv[0]} did not finish in the guest within {timeout_s:g} s and was killed")
            await asyncio.sleep(pause)
            pause = min(pause * 2, _POLL_MAX_S)

    async def _sync(self, timeout_s: float) -> None:
        token = secrets.randbelow(1 << 31)
        message = {"execute": "guest-sync-delimited", "arguments": {"id": token}}
        self._send(_DELIMITER + json.dumps(message).encode() + b"\n")
        await self._writer.drain()
        async with asyncio.timeout(timeout_s):
            while True:
                await self._read_until(_DELIMITER)  # what precedes the agent's delimiter is stale
                answer = await self._read_line("guest-sync-delimited")
                if isinstance(answer, dict) and answer.get("return") == token:
                    self._synced = True
                    return

    async def _command(self, command: str, arguments: dict[str, Any] | None, timeout_s: float) -> Any:
        message: dict[str, Any] = {"execute": command}
        if arguments:
            message["arguments"] = arguments
        self._send(json.dumps(message).encode() + b"\n")
        await self._writer.drain()
        async with asyncio.timeout(timeout_s):
            answer = await self._read_line(command)
        if not isinstance(answer, dict):
            raise _wrongly(command, "not an object")
        if "error" in answer:
            if not isinstance(answer["error"], dict):
                raise _wrongly(command, "an error that is not an object")
            raise GuestAgentError(command, answer["error"])
        return answer.get("return")

    def _send(self, data: bytes) -> None:
        if self._writer.is_closing():
            raise Unavailable("the guest agent connection is closed")
        self._writer.write(data)

    async def _read_until(self, separator: bytes) -> None:
        try:
            await self._reader.readuntil(separator)
        except asyncio.IncompleteReadError as exc:
            raise Unavailable("the guest agent connection closed") from exc
        except asyncio.LimitOverrunError as exc:
            await self._reader.readexactly(exc.consumed)  # drop what cannot be an answer and look on

    async def _read_line(self, command: str) -> Any:
        """The next answer, parsed; ``Unavailable`` for a line past the command's limit or that is not JSON."""
        limit = LINE_LIMIT if command in _LONG_ANSWERS else SHORT_LINE_LIMIT
        while True:
            try:
                line = await self._reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as exc:
                raise Unavailable("the guest agent connection closed") from exc
            except asyncio.LimitOverrunError as exc:
                raise Unavailable(f"the guest agent sent a line longer than {LINE_LIMIT} bytes") from exc
            if len(line) > limit:
                raise _wrongly(command, f"a line longer than {limit} bytes")
            text = line.strip().lstrip(_DELIMITER)
            if text:
                try:
                    return json.loads(text)
                except (ValueError, RecursionError) as exc:  # nesting past the parser's depth
                    raise _wrongly(command, "a line that is not JSON") from exc

    async def aclose(self) -> None:
        """Close the connection (safe twice); the guest keeps running."""
        self._writer.close()
        with contextlib.suppress(OSError, ConnectionError):
            await self._writer.wait_closed()


def _pid_of(answer: Any) -> int:
    pid = answer.get("pid") if isinstance(answer, dict) else None
    if type(pid) is not int:
        raise _wrongly("guest-exec", "no process id")
    return pid


def _result_of(status: dict[str, Any]) -> ExecResult:
    """An exited command's ``guest-exec-status``, every field checked (the guest writes it)."""
    code, signal = status.get("exitcode"), status.get("signal", 0)
    if type(signal) is not int or (code is not None and type(code) is not int):
        raise _wrongly("guest-exec-status", "an exit code or signal that is not a number")
    streams: list[bytes] = []
    for key in ("out-data", "err-data"):
        data = status.get(key, "")
        if not isinstance(data, str):
            raise _wrongly("guest-exec-status", f"{key} that is not text")
        try:
            streams.append(base64.b64decode(data, validate=True))
        except ValueError as exc:
            raise _wrongly("guest-exec-status", f"{key} that is not base64") from exc
    return ExecResult(
        exit_code=code if code is not None else (-signal or -1),
        stdout=streams[0],
        stderr=streams[1],
        truncated=bool(status.get("out-truncated") or status.get("err-truncated")),
    )
