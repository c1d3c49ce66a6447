"""What a running rig can do, one protocol a capability: a backend's rig implements the ones its machine has
(today's enclosure rig has them all: ``base.RigHandle``), and code that needs one thing of a rig asks for that
capability alone (the port forwards and the dev-domain lanes ask for ``RigNetwork``, the engine boot for
``EngineHost``). A desktop or VM backend implements what it offers.

Every method may raise ``Unavailable`` once the rig died. Resources (``Pty``) are closed with ``aclose``, which is
safe to call twice.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol
from urllib.parse import quote

from hangar.core.confine import ExecResult
from hangar.errors import Unavailable
from hangar.rigs.egress.gate import EgressEvent
from hangar.rigs.engines.session import EngineSession
from hangar.rigs.engines.xwd import Still

__all__ = [
    "Command", "Desktop", "EngineHost", "Pty", "RigBrowser", "RigDesktop", "RigExec", "RigFiles", "RigNetwork",
    "RigPower", "Selection", "Still",
]  # fmt: skip


@dataclass(frozen=True)
class Command:
    """A program run as the rig user: ``argv[0]`` is looked up on the rig's PATH, ``cwd`` is a guest path,
    ``env`` is added to the rig user's base environment (HOME, PATH, LANG...), never the server's."""

    argv: tuple[str, ...]
    cwd: str
    env: Mapping[str, str]
    stdin: bytes | None = None
    timeout_s: float | None = None
    # Contained: whatever the command leaves running (a background job, a double fork, a new session) is killed
    # when it exits, and killing it (a timeout, a cancelled call) kills all of that too. Otherwise what it
    # leaves in the background keeps running (a dev server started in a person's rig).
    contained: bool = False


class Pty(ABC):
    """A pseudo-terminal inside the rig running a login shell (xterm-compatible, TERM=xterm-256color)."""

    @abstractmethod
    async def read(self) -> bytes:
        """Return the next chunk of terminal output as soon as some is available; ``b""`` at EOF (shell exited
        or PTY closed). Never returns ``b""`` before EOF."""

    @abstractmethod
    async def write(self, data: bytes) -> None:
        """Send keystrokes (raw bytes) to the terminal. Raises ``Refused`` after the PTY closed."""

    @abstractmethod
    async def resize(self, cols: int, rows: int) -> None:
        """Set the window size (sends SIGWINCH to the foreground process). ``InvalidArgs`` on a size below 1x1
        or above 1000x1000."""

    @abstractmethod
    async def aclose(self) -> None:
        """Hang up the terminal and kill its shell; later ``read`` returns ``b""``. Safe to call twice."""


class RigExec(Protocol):
    """Running programs in the rig: one command, a streamed one, an interactive shell."""

    @abstractmethod
    async def exec(self, command: str, *, timeout_s: float | None, stdin: bytes | None = None) -> ExecResult:
        """Run ``command`` with ``bash -lc`` as the rig user in the home directory; collect stdout and stderr.
        ``timeout_s`` None means no limit; on timeout the command's whole process group is killed and
        ``timed_out`` is True. ``stdin`` is fed then closed (empty stdin when None). Works only while awake:
        the manager wakes a parked rig before exec."""

    @abstractmethod
    async def run(self, command: Command, on_stdout: Callable[[bytes], Awaitable[None]] | None) -> ExecResult:
        """Run ``command`` (see ``Command``), passing each stdout chunk to ``on_stdout`` as it comes. Cancelling
        the call kills the command's process group."""

    @abstractmethod
    async def open_pty(self, cols: int, rows: int) -> Pty:
        """Start an interactive login shell on a new PTY of the given size. Several may be open at once."""


class RigPower(Protocol):
    """Freezing and thawing the rig, and what it holds in memory."""

    @abstractmethod
    async def park(self) -> None:
        """Freeze every process of the rig (cgroup freezer). Memory stays resident. Idempotent."""

    @abstractmethod
    async def wake(self) -> None:
        """Thaw the rig after ``park``. Idempotent."""

    @abstractmethod
    async def resident_mb(self) -> int:
        """Resident memory of the rig's processes in MB (from the cgroup), rounded up; parked rigs count."""


class RigNetwork(Protocol):
    """The rig's network as the host sees it: its listening ports and their forwards, its egress allowlist
    and refusals, the door to the server, connections into it, lanes on its own loopback and its resolver's names.
    Those past ``grant_hosts`` have defaults that refuse or tell nothing, for a rig that lacks them."""

    @abstractmethod
    async def listening_ports(self) -> list[int]:
        """Sorted, de-duplicated TCP ports listening inside the rig (any address, IPv4 and IPv6)."""

    @abstractmethod
    async def forward(self, guest_port: int, host: str, host_port: int | None) -> int:
        """Relay connections to ``host:host_port`` on the host into the rig's ``guest_port``; return the bound
        host port. ``host`` is the rig's own loopback address (``hangar.rigs.loopback``), where ``host_port``
        may name a port (a taken one raises ``Conflict``; the caller may retry with None); or ``127.0.0.1`` or
        ``0.0.0.0`` (shared on the local network), where ``host_port`` must be None: the OS chooses, so no port
        another program of the host expects is ever taken. Limits on how many forwards exist are the manager's."""

    @abstractmethod
    async def unforward(self, host_port: int) -> None:
        """Stop the listener on ``host_port`` and its open relays. Unknown ports are ignored."""

    @abstractmethod
    async def grant_hosts(self, hosts: Iterable[str]) -> None:
        """Add names (exact or ``*.suffix``) to the rig's egress allowlist; takes effect for new connections.
        ``InvalidArgs`` on a name that is not a valid host name pattern."""

    def on_egress_refused(self, listener: Callable[[EgressEvent], None]) -> None:
        """Tell ``listener`` of each connection the rig's egress gate refuses from now on (called in the server's
        event loop; it must not block). A rig without a gate of its own has nothing to tell."""
        return None

    async def open_server_door(self, endpoint: str) -> str:
        """Open the rig's door to the server's MCP endpoint (``endpoint``, as the host reaches it) and return the
        URL a program in the rig reaches it at. Opens are counted: the door stays open until every one is
        matched by ``close_server_door``. Rigs that have no such door refuse."""
        raise Unavailable("this kind of rig has no door to the server")

    async def close_server_door(self) -> None:
        """Undo one ``open_server_door``; the last one closes the door and ends what still goes through it."""
        return None  # a rig without a door has nothing to close

    async def connect(self, guest_port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """A TCP connection to ``127.0.0.1:<guest_port>`` inside the rig (a dev domain's target); ``Unavailable``
        when nothing listens there."""
        raise Unavailable("this kind of rig cannot be connected to")

    async def serve_loopback(
        self, guest_port: int, handler: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
    ) -> None:
        """Listen on the rig's own ``127.0.0.1:<guest_port>`` and run ``handler`` on the host for each connection
        (the dev-domain lanes on 80 and 443). Ports below 1024 cannot be taken by the rig user first."""
        raise Unavailable("this kind of rig cannot serve lanes on its loopback")

    async def set_local_names(self, names: frozenset[str]) -> None:
        """Names the rig's resolver answers with the rig's own loopback (its dev domains); replaces the set."""
        raise Unavailable("this kind of rig has no resolver of its own")


class RigFiles(Protocol):
    """Files inside the rig, written and read without following a path out of it."""

    @abstractmethod
    async def write_file(self, guest_path: str, data: AsyncIterator[bytes] | bytes, *, exclusive: bool) -> None:
        """Write a file at ``guest_path`` inside the rig, creating missing parent directories, owned by the
        rig user. ``exclusive`` refuses (``Conflict``) when the file already exists. A path whose resolution
        leaves the rig root, or crosses a symlink, is ``Refused``."""

    @abstractmethod
    def read_file(self, guest_path: str) -> AsyncIterator[bytes]:
        """Stream a regular file's bytes from inside the rig (an async generator: ``async for chunk in
        handle.read_file(p)``, no ``await``). ``NotFound`` when missing; ``Refused`` for paths escaping the
        rig (``..``, symlinks pointing out) and for non-regular files; raised on the first iteration."""


class RigBrowser(Protocol):
    """The browser engine a browser rig booted with; other rigs refuse both."""

    def browser(self) -> EngineSession:
        """The connected engine of a browser rig (booted with the rig); other rigs refuse."""
        raise Unavailable("this rig runs no browser engine")

    def engine_log(self) -> str:
        """What a browser rig's engine processes wrote (stdout and stderr, the newest part of each), for
        diagnosing an engine; other rigs refuse. Pages can make an engine log anything: untrusted text."""
        raise Unavailable("this rig runs no browser engine")


Selection = Literal["clipboard", "primary", "xdnd"]


class Desktop(ABC):
    """An X11 desktop inside a rig (the ``computer`` surface): coordinates are guest pixels in the current mode,
    keys are X11 key names joined by ``+`` (``ctrl+shift+t``, ``Return``)."""

    @abstractmethod
    async def size(self) -> tuple[int, int]:
        """The display's current width and height."""

    @abstractmethod
    async def screenshot(self, max_width: int, max_height: int) -> Still:
        """A PNG still of the whole screen fit within the box, with the display size it was taken at."""

    @abstractmethod
    async def cursor(self) -> tuple[int, int]:
        """Where the pointer is."""

    @abstractmethod
    async def pointer(self, steps: Sequence[str]) -> None:
        """Pointer steps in xdotool's words (``mousemove 10 20``, ``click --repeat 2 1``, ``mousedown 1``),
        carried out in order. Coordinates must lie on the display (``check_point``)."""

    @abstractmethod
    async def check_point(self, x: int, y: int, field: str) -> None:
        """``InvalidArgs`` naming ``field`` when (x, y) lies off the current display."""

    @abstractmethod
    async def key(self, combo: str, hold_s: float | None, field: str) -> None:
        """Press and release ``combo`` (held ``hold_s`` seconds when given); an X11 name the desktop does not know
        is ``InvalidArgs`` naming ``field``, and nothing is pressed."""

    @abstractmethod
    async def type_text(self, text: str) -> None:
        """Type ``text`` as keystrokes into the focused window."""

    @abstractmethod
    async def set_size(self, width: int, height: int) -> tuple[int, int]:
        """Change the display mode; returns the size now in effect."""

    @abstractmethod
    async def read_selection(self, selection: Selection) -> str:
        """The text an X selection holds (``xdnd``: a live drag's payload); empty when nothing owns it."""

    @abstractmethod
    async def write_clipboard(self, data: bytes, target: str = "UTF8_STRING") -> None:
        """Own the CLIPBOARD selection with ``data`` offered as ``target`` (UTF-8 text by default; ``image/png``,
        ``text/uri-list``)."""

    async def offer_files(self, guest_paths: Sequence[str]) -> None:
        """Put files on the CLIPBOARD as their ``file://`` URIs, the way file managers and toolkits take them."""
        await self.write_clipboard(file_uris(guest_paths), "text/uri-list")

    @abstractmethod
    def log(self) -> str:
        """What the X server and the window manager said (the newest part of each): for diagnosing."""


def file_uris(guest_paths: Sequence[str]) -> bytes:
    """Guest paths as a ``text/uri-list`` (RFC 2483: CRLF after each URI)."""
    return "".join(f"file://{quote(p)}\r\n" for p in guest_paths).encode()


class RigDesktop(Protocol):
    """The desktop a computer rig booted with; other rigs refuse."""

    def desktop(self) -> Desktop:
        raise Unavailable("this rig runs no desktop")


class EngineHost(RigExec, RigFiles, RigNetwork, Protocol):
    """What booting a browser engine inside a rig asks of it: its files written, its programs run, its port
    forwarded."""
