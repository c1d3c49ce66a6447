"""A person's terminal on a rig: one shell on a PTY, kept across the lanes that show it, with its recent output.

A terminal lane (``terminal``) that closes, a dropped connection or a reload of the page, does not end the person's
shell: it is kept, still running and its output still read, and the person's next lane on the same rig attaches to
it, receiving the recent output first (the ``Scrollback``, at most the setting ``terminal_scrollback_bytes``,
``HANGAR_TERMINAL_SCROLLBACK_BYTES``, by default 64 KiB, starting at a line) and then what the shell prints from
then on. Several lanes of the same person show the same shell. A kept terminal nobody shows for
``terminal_keep_seconds`` (``HANGAR_TERMINAL_KEEP_SECONDS``, by default ten minutes) is closed by the rig's
sweep (every 30 s), and every one closes with its rig or when its shell exits (the next lane starts a new shell, with no
output of the old one).

A shell is kept per person and credential (``Holder``): only lanes of the credential that started it attach to it, so
the output of one person's terminal never reaches another person, a lane of another rig, or another credential of
the same person (an application they granted a credential to gets a shell of its own, never what they typed on
their own device); two tabs of one browser, which share its credential, share the shell. Each lane is authorized
as any terminal lane is, when it opens and while it runs. A lane that ends because its access ended closes the
terminal with it; a person who is removed from the workspace or demoted below member loses every kept terminal on
every rig of it at once (``RigCloser.on_ending_event``), and the sweep closes those whose person lost that access
without an event.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass

from hangar.rigs.backends.base import Pty

log = logging.getLogger(__name__)

SINK_CHUNKS = 64  # output chunks an attached lane may fall behind by before the shell's output waits for it
LINE_SEARCH = 4096  # a cut scrollback starts at its first line within this many bytes


class Scrollback:
    """The newest ``limit`` bytes a terminal printed. Once older output was dropped, the replay starts after the
    first line break it holds (when one is near the start), so it does not begin inside a character or an escape
    sequence."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._data = bytearray()
        self._cut = False

    def add(self, data: bytes) -> None:
        self._data += data
        over = len(self._data) - self.limit
        if over > 0:
            del self._data[:over]
            self._cut = True

    def replay(self) -> bytes:
        data = bytes(self._data)
        if self._cut:
            line = data.find(b"\n", 0, LINE_SEARCH)
            if line >= 0:
                return data[line + 1 :]
        return data


class KeptTerminal:
    """One shell on a PTY, its output read into its scrollback and handed to every lane attached to it."""

    def __init__(self, pty: Pty, scrollback_bytes: int, now: float) -> None:
        self.pty = pty
        self.scrollback = Scrollback(scrollback_bytes)
        self.detached_since: float | None = now  # monotonic; None while a lane shows it
        self.ended = asyncio.Event()  # the shell exited or the terminal was closed
        self._sinks: set[asyncio.Queue[bytes]] = set()
        self._reader = asyncio.create_task(self._read(), name="rigs:terminal")

    async def _read(self) -> None:
        try:
            while data := await self.pty.read():
                self.scrollback.add(data)
                for sink in list(self._sinks):
                    await sink.put(data)  # a lane that is slow to send slows the shell's output, as a PTY does
        finally:
            self.ended.set()

    def attach(self) -> tuple[bytes, asyncio.Queue[bytes]]:
        """The recent output to send first, and the queue the output from then on arrives in (nothing printed in
        between is lost or sent twice: both are taken at once)."""
        sink: asyncio.Queue[bytes] = asyncio.Queue(maxsize=SINK_CHUNKS)
        self._sinks.add(sink)
        self.detached_since = None
        return self.scrollback.replay(), sink

    def detach(self, sink: asyncio.Queue[bytes], now: float) -> None:
        self._sinks.discard(sink)
        while not sink.empty():  # a reader waiting on this lane's full queue goes on
            sink.get_nowait()
        if not self._sinks:
            self.detached_since = now

    async def aclose(self) -> None:
        self._reader.cancel()
        await asyncio.gather(self._reader, return_exceptions=True)
        self.ended.set()
        with contextlib.suppress(Exception):
            await self.pty.aclose()


@dataclass(frozen=True)
class Holder:
    """Whose kept terminal it is: a person and the credential (device) their lane came through."""

    user_id: str
    device_id: str


class KeptTerminals:
    """A rig's kept terminals, one per person and credential."""

    def __init__(self) -> None:
        self._by_holder: dict[Holder, KeptTerminal] = {}

    def get(self, holder: Holder) -> KeptTerminal | None:
        """The holder's terminal when its shell still runs."""
        kept = self._by_holder.get(holder)
        if kept is not None and kept.ended.is_set():
            del self._by_holder[holder]
            return None
        return kept

    def put(self, holder: Holder, kept: KeptTerminal) -> None:
        self._by_holder[holder] = kept

    def people(self) -> set[str]:
        """The people who hold a terminal here (whose access the sweep checks)."""
        return {holder.user_id for holder in self._by_holder}

    async def close(self, holder: Holder) -> None:
        kept = self._by_holder.pop(holder, None)
        if kept is not None:
            await kept.aclose()

    async def close_person(self, user_id: str) -> None:
        """Close every terminal of the person, whichever credential started it."""
        for holder in [h for h in self._by_holder if h.user_id == user_id]:
            await self.close(holder)

    async def reap(self, now: float, keep_s: float) -> None:
        """Close the terminals nobody has shown for ``keep_s``, and forget those whose shell exited."""
        for holder, kept in list(self._by_holder.items()):
            idle = kept.detached_since is not None and now - kept.detached_since >= keep_s
            if idle or kept.ended.is_set():
                if self._by_holder.get(holder) is kept:
                    del self._by_holder[holder]
                await kept.aclose()

    async def close_all(self) -> None:
        kept, self._by_holder = list(self._by_holder.values()), {}
        for terminal in kept:
            await terminal.aclose()
