"""A phone for the tests: an in-process peer speaking adbd's wire protocol over TCP, which Debian's ``adb connect
127.0.0.1:<port>`` (and so the server's mobile backend) drives as it would a device or an emulator.

What it speaks: the transport messages (``CNXN``, ``OPEN``, ``OKAY``, ``WRTE``, ``CLSE``, one ``WRTE`` in flight
per stream until the other side's ``OKAY``), the ``shell`` service with the shell protocol v2 (stdout, stderr and
the exit code framed) and the raw ``exec`` service. It advertises the ``shell_v2`` and ``cmd`` features, so
``adb install`` streams the package into ``cmd package install -S <size>``.

What a command does: the command line is parsed as the device's own shell would (single and double quotes,
backslashes, ``;`` between commands), and an unquoted shell metacharacter is recorded as a fault (``faults``):
text a caller meant literally would have been read by the device's shell. Then ``input``, ``screencap``,
``uiautomator``, ``cat``, ``rm``, ``pm``, ``cmd package``, ``am``, ``getprop``, ``echo`` and ``wm`` answer as a
device would, and everything is recorded (``commands``: each command's argv; ``events``: what reached the
screen). A test package is a zip with an entry ``hangar-test-package`` holding ``<package> <activity>``.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import io
import struct
import zipfile
import zlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

A_CNXN = 0x4E584E43
A_OPEN = 0x4E45504F
A_OKAY = 0x59414B4F
A_CLSE = 0x45534C43
A_WRTE = 0x45545257
VERSION = 0x01000001
MAX_PAYLOAD = 256 * 1024
BANNER = (
    b"device::ro.product.name=hangar_phone;ro.product.model=Hangar_Test_Phone;ro.product.device=hangar;"
    b"features=shell_v2,cmd"
)

SHELL_STDIN, SHELL_STDOUT, SHELL_STDERR, SHELL_EXIT, SHELL_CLOSE_STDIN = 0, 1, 2, 3, 4
SCREEN = (1080, 1920)
UI_XML = (
    "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation=\"0\">"
    '<node index="0" text="Hello phone" class="android.widget.TextView" package="com.example.home" '
    'bounds="[0,0][1080,1920]" /></hierarchy>'
)
Sender = Callable[[int, int, int, bytes], None]
KEY_NAMES = {66: "KEYCODE_ENTER", 61: "KEYCODE_TAB", 62: "KEYCODE_SPACE"}


class ShellFault(Exception):
    pass


def split_command_line(line: str) -> list[list[str]]:
    """The commands of ``line`` (separated by unquoted ``;``), each as its argv, as a POSIX shell reads words.
    An unquoted metacharacter that would make the shell do more than split words raises ``ShellFault``."""
    commands: list[list[str]] = []
    argv: list[str] = []
    word: list[str] | None = None
    i = 0
    while i < len(line):
        c = line[i]
        if c in " \t":
            if word is not None:
                argv.append("".join(word))
                word = None
        elif c == ";":
            if word is not None:
                argv.append("".join(word))
                word = None
            commands.append(argv)
            argv = []
        elif c == "'":
            end = line.find("'", i + 1)
            if end < 0:
                raise ShellFault("unterminated single quote")
            word = (word or []) + [line[i + 1 : end]]
            i = end
        elif c == '"':
            j = i + 1
            chunk: list[str] = []
            while j < len(line) and line[j] != '"':
                if line[j] in "$`":
                    raise ShellFault(f"{line[j]!r} expands inside double quotes")
                if line[j] == "\\" and j + 1 < len(line) and line[j + 1] in '"\\$`\n':
                    j += 1
                chunk.append(line[j])
                j += 1
            if j >= len(line):
                raise ShellFault("unterminated double quote")
            word = (word or []) + chunk
            i = j
        elif c == "\\":
            if i + 1 >= len(line):
                raise ShellFault("a trailing backslash")
            word = (word or []) + [line[i + 1]]
            i += 1
        elif c in "|&<>()$`*?[]{}~#!\n=" and not (c in "=~#!" and word is not None):
            raise ShellFault(f"unquoted {c!r} would be read by the device's shell")
        else:
            word = (word or []) + [c]
        i += 1
    if word is not None:
        argv.append("".join(word))
    commands.append(argv)
    return [c for c in commands if c]


def png(width: int, height: int) -> bytes:
    row = b"\x00" + bytes((30, 90, 160)) * width
    raw = zlib.compress(row * height, 1)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", raw) + chunk(b"IEND", b"")


@dataclass
class Installed:
    package: str
    activity: str
    sha256: str
    data_cleared: int = 0


@dataclass
class Stream:
    remote: int
    inbox: asyncio.Queue[bytes | None] = field(default_factory=asyncio.Queue)
    acked: asyncio.Event = field(default_factory=asyncio.Event)
    closed: bool = False


@dataclass
class Result:
    stdout: bytes = b""
    stderr: bytes = b""
    code: int = 0


class FakePhone:
    """The device: ``port`` once started; ``commands``, ``events``, ``installed``, ``faults`` and ``services``
    record what it was told."""

    def __init__(self) -> None:
        self.port = 0
        self.services: list[str] = []
        self.commands: list[list[str]] = []
        self.events: list[tuple[str, ...]] = []
        self.faults: list[str] = []
        self.installed: dict[str, Installed] = {}
        self.started: list[str] = []
        self.stopped: list[str] = []
        self.files: dict[str, bytes] = {}
        self.connections = 0
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._connection, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 5)

    @property
    def serial(self) -> str:
        return f"127.0.0.1:{self.port}"

    # -- the transport ------------------------------------------------------------------------------------

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        streams: dict[int, Stream] = {}
        tasks: set[asyncio.Task[None]] = set()
        next_id = 1

        def send(command: int, arg0: int, arg1: int, data: bytes = b"") -> None:
            check = sum(data) & 0xFFFFFFFF
            writer.write(struct.pack("<6I", command, arg0, arg1, len(data), check, command ^ 0xFFFFFFFF) + data)

        try:
            while True:
                header = await reader.readexactly(24)
                command, arg0, arg1, length, _check, _magic = struct.unpack("<6I", header)
                data = await reader.readexactly(length) if length else b""
                if command == A_CNXN:
                    send(A_CNXN, VERSION, MAX_PAYLOAD, BANNER)
                elif command == A_OPEN:
                    service = data.rstrip(b"\0").decode()
                    self.services.append(service)
                    mine, next_id = next_id, next_id + 1
                    stream = Stream(remote=arg0)
                    streams[mine] = stream
                    send(A_OKAY, mine, arg0)
                    task = asyncio.create_task(self._serve(service, mine, stream, send, writer))
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)
                elif command == A_WRTE and arg1 in streams:
                    streams[arg1].inbox.put_nowait(data)
                    send(A_OKAY, arg1, arg0)
                elif command == A_OKAY and arg1 in streams:
                    streams[arg1].acked.set()
                elif command == A_CLSE and arg1 in streams:
                    gone = streams.pop(arg1)
                    gone.closed = True
                    gone.inbox.put_nowait(None)
                    gone.acked.set()
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            for task in list(tasks):
                task.cancel()
            writer.close()

    async def _serve(self, service: str, mine: int, stream: Stream, send: Sender, writer: asyncio.StreamWriter) -> None:
        async def write(data: bytes) -> None:
            for at in range(0, len(data), MAX_PAYLOAD):
                if stream.closed:
                    return
                stream.acked.clear()
                send(A_WRTE, mine, stream.remote, data[at : at + MAX_PAYLOAD])
                await writer.drain()
                await stream.acked.wait()

        name, _, line = service.partition(":")
        options = name.split(",")
        try:
            if options[0] == "shell":
                result = await self._run_line(line, self._stdin(stream, framed="v2" in options))
                if "v2" in options:
                    out = b""
                    for kind, chunk in ((SHELL_STDOUT, result.stdout), (SHELL_STDERR, result.stderr)):
                        if chunk:
                            out += struct.pack("<BI", kind, len(chunk)) + chunk
                    out += struct.pack("<BI", SHELL_EXIT, 1) + bytes([result.code & 0xFF])
                    await write(out)
                else:
                    await write(result.stdout + result.stderr)
            elif options[0] == "exec":
                result = await self._run_line(line, self._stdin(stream, framed=False))
                await write(result.stdout)
            # Anything else is a service this device does not offer: closed straight away.
        finally:
            if not stream.closed:
                stream.closed = True
                send(A_CLSE, mine, stream.remote, b"")
                with contextlib.suppress(ConnectionError):
                    await writer.drain()

    @staticmethod
    async def _stdin(stream: Stream, *, framed: bool) -> AsyncIterator[bytes]:
        pending = b""
        while True:
            chunk = await stream.inbox.get()
            if chunk is None:
                return
            if not framed:
                yield chunk
                continue
            pending += chunk
            while len(pending) >= 5:
                kind, size = struct.unpack("<BI", pending[:5])
                if len(pending) < 5 + size:
                    break
                body, pending = pending[5 : 5 + size], pending[5 + size :]
                if kind == SHELL_CLOSE_STDIN:
                    return
                if kind == SHELL_STDIN:
                    yield body

    # -- the device's programs ------------------------------------------------------------------------------

    async def _run_line(self, line: str, stdin: AsyncIterator[bytes]) -> Result:
        try:
            commands = split_command_line(line)
        except ShellFault as exc:
            self.faults.append(f"{exc}: {line}")
            return Result(stderr=f"/system/bin/sh: syntax error: {exc}\n".encode(), code=2)
        result = Result()
        for argv in commands:
            self.commands.append(argv)
            one = await self._program(argv, stdin)
            result = Result(result.stdout + one.stdout, result.stderr + one.stderr, one.code)
        return result

    async def _program(self, argv: list[str], stdin: AsyncIterator[bytes]) -> Result:
        name, args = argv[0], argv[1:]
        if name == "input":
            return self._input(args)
        if name == "screencap" and args == ["-p"]:
            return Result(stdout=png(*SCREEN))
        if name == "wm" and args == ["size"]:
            return Result(stdout=f"Physical size: {SCREEN[0]}x{SCREEN[1]}\n".encode())
        if name == "uiautomator" and len(args) == 2 and args[0] == "dump":
            self.files[args[1]] = UI_XML.encode()
            return Result(stdout=f"UI hierchary dumped to: {args[1]}\n".encode())
        if name == "cat" and len(args) == 1:
            if args[0] not in self.files:
                return Result(stderr=f"cat: {args[0]}: No such file or directory\n".encode(), code=1)
            return Result(stdout=self.files[args[0]])
        if name == "rm" and args[:1] == ["-f"]:
            for path in args[1:]:
                self.files.pop(path, None)
            return Result()
        if name == "getprop":
            return Result(stdout=b"1\n" if args == ["sys.boot_completed"] else b"\n")
        if name == "echo":
            return Result(stdout=(" ".join(args) + "\n").encode())
        if name == "cmd" and args[:1] == ["package"]:
            return await self._package(args[1:], stdin)
        if name == "pm":
            return await self._package(args, stdin)
        if name == "am":
            return self._am(args)
        return Result(stderr=f"/system/bin/sh: {name}: inaccessible or not found\n".encode(), code=127)

    def _input(self, args: list[str]) -> Result:
        if args[:1] == ["tap"] and len(args) == 3:
            self.events.append(("tap", args[1], args[2]))
        elif args[:1] == ["swipe"] and len(args) in (5, 6):
            self.events.append(("swipe", *args[1:]))
        elif args[:1] == ["text"] and len(args) == 2:
            self.events.append(("text", args[1].replace("%s", " ")))
        elif args[:1] == ["keyevent"] and len(args) >= 2:
            for key in args[1:]:
                self.events.append(("key", KEY_NAMES.get(int(key), key) if key.isdigit() else key))
        else:
            return Result(stderr=b"Error: Unknown command\n", code=1)
        return Result()

    async def _package(self, args: list[str], stdin: AsyncIterator[bytes]) -> Result:
        if args[:1] == ["install"] and "-S" in args:
            size = int(args[args.index("-S") + 1])
            data = b""
            async for chunk in stdin:
                data += chunk
                if len(data) >= size:
                    break
            return self._install(data[:size])
        if args[:1] == ["uninstall"] and len(args) == 2:
            if self.installed.pop(args[1], None) is None:
                return Result(stdout=b"Failure [DELETE_FAILED_INTERNAL_ERROR]\n")
            return Result(stdout=b"Success\n")
        if args[:1] == ["clear"] and len(args) == 2:
            if args[1] not in self.installed:
                return Result(stdout=b"Failed\n")
            self.installed[args[1]].data_cleared += 1
            return Result(stdout=b"Success\n")
        if args[:1] == ["resolve-activity"]:
            found = self.installed.get(args[-1])
            if found is None:
                return Result(stdout=b"No activity found\n")
            return Result(
                stdout=f"priority=0 preferredOrder=0 match=0x108000 specificIndex=-1 isDefault=true\n"
                f"{found.package}/{found.activity}\n".encode()
            )
        return Result(stderr=b"Unknown package command\n", code=255)

    def _install(self, data: bytes) -> Result:
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as apk:
                package, activity = apk.read("hangar-test-package").decode().split()
        except (zipfile.BadZipFile, KeyError, ValueError):
            return Result(stdout=b"Failure [INSTALL_PARSE_FAILED_NOT_APK: not an APK]\n")
        self.installed[package] = Installed(package, activity, hashlib.sha256(data).hexdigest())
        return Result(stdout=b"Success\n")

    def _am(self, args: list[str]) -> Result:
        if args[:1] == ["force-stop"] and len(args) == 2:
            self.stopped.append(args[1])
            return Result()
        if args[:1] == ["start"]:
            if "-n" in args:
                component = args[args.index("-n") + 1]
                if component.split("/")[0] not in self.installed:
                    return Result(stderr=f"Error: Activity class {{{component}}} does not exist.\n".encode(), code=1)
                self.started.append(component)
                return Result(stdout=f"Starting: Intent {{ cmp={component} }}\n".encode())
            if "-d" in args:
                url = args[args.index("-d") + 1]
                self.events.append(("view", url))
                return Result(stdout=f"Starting: Intent {{ act=android.intent.action.VIEW dat={url} }}\n".encode())
        return Result(stderr=b"Error: bad arguments\n", code=1)


def phone_apk(package: str, activity: str = ".MainActivity") -> bytes:
    """A package the fake phone installs: a zip naming its package and launcher activity."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as apk:
        apk.writestr("hangar-test-package", f"{package} {activity}")
        apk.writestr("classes.dex", b"dex\n035\0" + bytes(64))
    return out.getvalue()
