"""A QMP client: QEMU's machine protocol over its unix socket, our own few lines of asyncio.

Why our own: we send a handful of commands (``input-send-event``, ``query-status``, ``stop``/``cont``, ``quit``)
and the protocol is JSON lines; the Python QMP library QEMU ships is not packaged for our interpreter in Debian.

One connection carries commands tagged with an ``id`` and matched to their answers by a reader task, so callers
may overlap; events go to a bounded queue (the oldest dropped) that ``next_event`` reads. A command whose answer
does not come within its deadline raises ``Unavailable`` (a guest under TCG is slow, not a reason to wait
forever); the connection closing fails every command waiting on it.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from collections import deque
from pathlib import Path
from typing import Any

from hangar.errors import HangarError, Unavailable

LINE_LIMIT = 1 << 20  # an answer line longer than this is a broken peer
COMMAND_TIMEOUT_S = 30.0
EVENTS_KEPT = 256


class QmpError(HangarError):
    """QEMU answered a command with an error (its class and description)."""

    def __init__(self, command: str, error: dict[str, Any]) -> None:
        self.error_class = str(error.get("class", "GenericError"))
        super().__init__(f"QEMU refused {command}: {error.get('desc', self.error_class)}")


class QmpClient:
    """``async with await QmpClient.connect(path)``: a negotiated QMP session."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, greeting: dict[str, Any]) -> None:
        self._reader = reader
        self._writer = writer
        self.greeting = greeting
        self._ids = itertools.count(1)
        self._waiting: dict[str, asyncio.Future[Any]] = {}
        self._events: deque[dict[str, Any]] = deque(maxlen=EVENTS_KEPT)
        self._event_ready = asyncio.Event()
        self._closed_reason: str | None = None
        self._task = asyncio.create_task(self._read_loop(), name="rigs:qmp")

    @classmethod
    async def connect(cls, path: Path, *, timeout_s: float = COMMAND_TIMEOUT_S) -> QmpClient:
        reader, writer = await open_socket(path, "monitor", LINE_LIMIT, timeout_s)
        try:
            greeting = await asyncio.wait_for(_read_json(reader), timeout_s)
            if not isinstance(greeting, dict) or "QMP" not in greeting:
                raise Unavailable("the VM's monitor did not greet as QMP")
        except BaseException:
            writer.close()
            raise
        client = cls(reader, writer, greeting)
        try:
            await client.execute("qmp_capabilities", timeout_s=timeout_s)
        except BaseException:
            await client.aclose()
            raise
        return client

    async def __aenter__(self) -> QmpClient:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.aclose()

    async def execute(
        self, command: str, arguments: dict[str, Any] | None = None, *, timeout_s: float = COMMAND_TIMEOUT_S
    ) -> Any:
        """Run ``command`` and return its ``return`` value; ``QmpError`` when QEMU refuses it."""
        if self._closed_reason is not None:
            raise Unavailable(f"the VM's monitor is closed ({self._closed_reason})")
        tag = f"h{next(self._ids)}"
        message: dict[str, Any] = {"execute": command, "id": tag}
        if arguments:
            message["arguments"] = arguments
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[tag] = future
        try:
            self._writer.write(json.dumps(message).encode() + b"\n")
            await self._writer.drain()
            answer = await asyncio.wait_for(asyncio.shield(future), timeout_s)
        except TimeoutError:
            raise Unavailable(f"the VM's monitor did not answer {command} within {timeout_s:g} s") from None
        except (ConnectionError, OSError) as exc:
            raise Unavailable(f"the VM's monitor went away during {command}: {exc}") from exc
        finally:
            self._waiting.pop(tag, None)
        if "error" in answer:
            raise QmpError(command, answer["error"])
        return answer.get("return")

    async def next_event(self, name: str | None = None, *, timeout_s: float = COMMAND_TIMEOUT_S) -> dict[str, Any]:
        """The oldest queued event (named ``name`` when given; others before it are dropped)."""
        async with asyncio.timeout(timeout_s):
            while True:
                while self._events:
                    event = self._events.popleft()
                    if name is None or event.get("event") == name:
                        return event
                if self._closed_reason is not None:
                    raise Unavailable(f"the VM's monitor is closed ({self._closed_reason})")
                self._event_ready.clear()
                await self._event_ready.wait()

    async def _read_loop(self) -> None:
        reason = "QEMU closed it"
        try:
            while True:
                message = await _read_json(self._reader)
                if not isinstance(message, dict):
                    continue
                if "event" in message:
                    self._events.append(message)
                    self._event_ready.set()
                    continue
                future = self._waiting.get(str(message.get("id")))
                if future is not None and not future.done():
                    future.set_result(message)
        except EOFError:
            pass
        except (OSError, ValueError, Unavailable) as exc:
            reason = str(exc)
        finally:
            self._closed_reason = reason
            self._event_ready.set()
            for future in self._waiting.values():
                if not future.done():
                    future.set_exception(Unavailable(f"the VM's monitor closed ({reason})"))

    async def aclose(self) -> None:
        """Close the connection (safe twice); QEMU keeps running."""
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self._writer.close()
        with contextlib.suppress(OSError, ConnectionError):
            await self._writer.wait_closed()


async def open_socket(
    path: Path, what: str, limit: int, timeout_s: float
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A connection to one of the VM's unix sockets (``what``: its monitor, its guest agent), within a deadline.
    QEMU binds a socket a moment before it listens on it: a refusal then is tried again until the deadline."""
    loop = asyncio.get_running_loop()
    until = loop.time() + timeout_s
    while True:
        try:
            return await asyncio.wait_for(asyncio.open_unix_connection(str(path), limit=limit), timeout_s)
        except (ConnectionRefusedError, FileNotFoundError) as exc:
            if loop.time() > until:
                raise Unavailable(f"the VM's {what} socket cannot be reached: {exc}") from exc
            await asyncio.sleep(0.02)
        except (OSError, TimeoutError) as exc:
            raise Unavailable(f"the VM's {what} socket cannot be reached: {exc}") from exc


async def _read_json(reader: asyncio.StreamReader) -> Any:
    """One JSON line; EOFError at the end of the stream."""
    try:
        line = await reader.readuntil(b"\n")
    except asyncio.IncompleteReadError as exc:
        raise EOFError from exc
    except asyncio.LimitOverrunError as exc:
        raise Unavailable(f"the VM sent a line longer than {LINE_LIMIT} bytes") from exc
    return json.loads(line)
