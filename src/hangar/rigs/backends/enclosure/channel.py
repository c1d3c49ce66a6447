"""The host side of the exec channel: one Unix-socket connection to the rig's agent per request.

The frame format is described in ``agent``'s docstring.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

from hangar.core.confine import MAX_OUTPUT
from hangar.errors import Conflict, InvalidArgs, NotFound, Refused, Unavailable
from hangar.rigs.backends.base import Command, ExecResult, Pty


def encode(values: dict[str, object]) -> bytes:
    """The agent's flat map encoding: ``key NUL value NUL ...`` (commands never contain NUL)."""
    return "\0".join(f"{k}\0{'' if v is None else v}" for k, v in values.items()).encode("utf-8", "surrogateescape")


def decode(payload: bytes) -> dict[str, str]:
    parts = payload.decode("utf-8", "replace").split("\0")
    return dict(zip(parts[0::2], parts[1::2], strict=False))


def frame(kind: bytes, payload: bytes) -> bytes:
    return kind + struct.pack("!I", len(payload)) + payload


async def read_frame(reader: asyncio.StreamReader) -> tuple[bytes, bytes]:
    head = await reader.readexactly(5)
    return head[:1], await reader.readexactly(struct.unpack("!I", head[1:])[0])


class AgentChannel:
    def __init__(self, socket_path: Path) -> None:
        self.socket_path = socket_path

    async def _connect(self, request: dict[str, Any]) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        try:
            reader, writer = await asyncio.open_unix_connection(str(self.socket_path))
        except OSError as exc:
            raise Unavailable(f"the rig's exec channel is gone ({exc.strerror})") from exc
        writer.write(frame(b"J", encode(request)))
        return reader, writer

    async def ping(self) -> None:
        reader, writer = await self._connect({"op": "ping"})
        try:
            await read_frame(reader)
        except (asyncio.IncompleteReadError, ConnectionError) as exc:
            raise Unavailable("the rig's agent did not answer") from exc
        finally:
            writer.close()

    async def exec(self, command: str, timeout_s: float | None, stdin: bytes | None) -> ExecResult:
        if not isinstance(command, str) or not command.strip():
            raise InvalidArgs("command must be a non-empty string", field="command")
        if "\0" in command:
            raise InvalidArgs("command must not contain NUL characters", field="command")
        return await self._exec({"op": "exec", "cmd": command}, timeout_s, stdin, None)

    async def run(self, command: Command, on_stdout: Callable[[bytes], Awaitable[None]] | None) -> ExecResult:
        fields = [*command.argv, command.cwd, *command.env, *command.env.values()]
        if not command.argv or any("\0" in f for f in fields):
            raise InvalidArgs("a command needs a program, and no part of it may contain NUL", field="command")
        request: dict[str, Any] = {"op": "exec", "argc": len(command.argv), "cwd": command.cwd}
        if command.contained:
            request["reap"] = 1
        request.update({f"arg.{i}": arg for i, arg in enumerate(command.argv)})
        request.update({f"env.{k}": v for k, v in command.env.items()})
        return await self._exec(request, command.timeout_s, command.stdin, on_stdout)

    async def _exec(
        self,
        request: dict[str, Any],
        timeout_s: float | None,
        stdin: bytes | None,
        on_stdout: Callable[[bytes], Awaitable[None]] | None,
    ) -> ExecResult:
        if timeout_s is not None and timeout_s <= 0:
            raise InvalidArgs("timeout must be positive", field="timeout")
        reader, writer = await self._connect({**request, "timeout": timeout_s, "stdin": int(stdin is not None)})
        out, err = bytearray(), bytearray()
        try:
            if stdin is not None:
                for start in range(0, len(stdin), 65536):
                    writer.write(frame(b"I", stdin[start : start + 65536]))
                writer.write(frame(b"E", b""))
            await writer.drain()
            while True:
                kind, payload = await read_frame(reader)
                if kind == b"O":
                    if on_stdout is not None:
                        await on_stdout(payload)
                    if len(out) < MAX_OUTPUT:
                        out += payload
                elif kind == b"R" and len(err) < MAX_OUTPUT:
                    err += payload
                elif kind == b"X":
                    result = decode(payload)
                    if "failed" in result:
                        raise Unavailable(f"the rig's agent could not run the command: {result['failed']}")
                    return ExecResult(
                        exit_code=int(result["code"]),
                        stdout=out[:MAX_OUTPUT].decode("utf-8", "replace"),
                        stderr=err[:MAX_OUTPUT].decode("utf-8", "replace"),
                        timed_out=result.get("timed_out") == "1",
                    )
        except (asyncio.IncompleteReadError, ConnectionError) as exc:
            raise Unavailable("the rig's exec channel closed before the command finished") from exc
        finally:
            # Closing before the exit frame (a timeout or a cancelled task) makes the agent kill the command.
            writer.close()

    async def read_file(self, guest_path: str) -> AsyncIterator[bytes]:
        """A file's bytes as the rig user reads it inside the rig (``NotFound``/``Refused`` before the first
        chunk when the agent cannot open it)."""
        reader, writer = await self._connect({"op": "read", "path": guest_path})
        try:
            await writer.drain()
            while True:
                kind, payload = await read_frame(reader)
                if kind == b"O":
                    yield payload
                elif kind == b"X":
                    _raise_file_error(decode(payload), guest_path)
                    return
        except (asyncio.IncompleteReadError, ConnectionError) as exc:
            raise Unavailable("the rig's channel closed while reading the file") from exc
        finally:
            writer.close()

    async def write_file(self, guest_path: str, data: AsyncIterator[bytes] | bytes, *, exclusive: bool) -> None:
        """Write a file as the rig user inside the rig, creating its parent directories."""
        reader, writer = await self._connect({"op": "write", "path": guest_path, "exclusive": int(exclusive)})
        try:
            await writer.drain()
            kind, payload = await read_frame(reader)  # K once the file is open, else the refusal
            if kind == b"X":
                _raise_file_error(decode(payload), guest_path)
                raise Unavailable("the rig's agent answered a write without opening the file")
            chunks = _single(bytes(data)) if isinstance(data, bytes | bytearray) else data
            async for chunk in chunks:
                for start in range(0, len(chunk), 65536):
                    writer.write(frame(b"I", chunk[start : start + 65536]))
                await writer.drain()
            writer.write(frame(b"E", b""))
            await writer.drain()
            kind, payload = await read_frame(reader)
            if kind == b"X":
                _raise_file_error(decode(payload), guest_path)
        except (asyncio.IncompleteReadError, ConnectionError) as exc:
            raise Unavailable("the rig's channel closed while writing the file") from exc
        finally:
            writer.close()

    async def open_pty(self, cols: int, rows: int, on_close: Callable[[AgentPty], None]) -> AgentPty:
        _check_size(cols, rows)
        reader, writer = await self._connect({"op": "pty", "cols": cols, "rows": rows})
        await writer.drain()
        return AgentPty(reader, writer, on_close)


async def _single(data: bytes) -> AsyncIterator[bytes]:
    yield data


def _raise_file_error(reply: dict[str, str], guest_path: str) -> None:
    kind, message = reply.get("error"), reply.get("message", "")
    if "failed" in reply:
        raise Unavailable(f"the rig's agent could not use {guest_path}: {reply['failed']}")
    if kind is None:
        return
    if kind == "notfound":
        raise NotFound(f"{guest_path} does not exist in the rig")
    if kind == "exists":
        raise Conflict(f"{guest_path} already exists in the rig")
    raise Refused(f"{guest_path}: the rig user cannot use it ({message})")


def _check_size(cols: int, rows: int) -> None:
    for name, value in (("cols", cols), ("rows", rows)):
        if not isinstance(value, int) or not 1 <= value <= 1000:
            raise InvalidArgs(f"{name} must be between 1 and 1000", field=name)


class AgentPty(Pty):
    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, on_close: Callable[[AgentPty], None]
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._on_close = on_close
        self._closed = False
        self._eof = False
        self.exit_code: int | None = None

    async def read(self) -> bytes:
        while not self._eof:
            try:
                kind, payload = await read_frame(self._reader)
            except (asyncio.IncompleteReadError, ConnectionError, OSError):
                self._eof = True
                break
            if kind == b"D" and payload:
                return payload
            if kind == b"X":
                self.exit_code = int(decode(payload).get("code") or -1)
                self._eof = True
                self._writer.close()  # the agent waits for this hang-up before it lets the connection go
        return b""

    async def write(self, data: bytes) -> None:
        if self._closed or self._eof:
            raise Refused("the terminal is closed")
        try:
            self._writer.write(frame(b"D", bytes(data)))
            await self._writer.drain()
        except (ConnectionError, OSError) as exc:
            raise Refused("the terminal is closed") from exc

    async def resize(self, cols: int, rows: int) -> None:
        _check_size(cols, rows)
        if self._closed or self._eof:
            raise Refused("the terminal is closed")
        self._writer.write(frame(b"W", encode({"cols": cols, "rows": rows})))
        with contextlib.suppress(ConnectionError, OSError):
            await self._writer.drain()

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._eof = True
        self._writer.close()
        with contextlib.suppress(Exception):
            await self._writer.wait_closed()
        self._on_close(self)
