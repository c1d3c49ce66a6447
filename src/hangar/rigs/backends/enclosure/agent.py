"""The agent inside a rig: runs commands and terminals for the host. Standard library only, run by the image's
own python3 as the rig user (``python3 -I -S agent.py <listening-fd>``); it is never imported by the server.

The host creates the listening Unix socket outside the rig and passes it in as an inherited descriptor, so no
path inside the rig leads to it. One connection carries one request. Frames are a type byte, a 4-byte
big-endian length and the payload. The first frame from the host is ``J`` with a JSON request:

- ``{"op": "ping"}`` -> ``X {"ok": true}``
- ``{"op": "exec", "cmd": str, "timeout": float|null, "stdin": bool}``; the host then sends ``I`` chunks and
  one ``E`` when ``stdin`` is true; the agent sends ``O`` (stdout) and ``R`` (stderr) chunks, then
  ``X {"code": int, "timed_out": bool}``.
- ``{"op": "pty", "cols": int, "rows": int}``; both sides send ``D`` data; the host sends
  ``W {"cols", "rows"}`` to resize; the agent sends ``X {"code": int}`` when the shell exits. The host closing
  the connection hangs the terminal up.
"""

import asyncio
import contextlib
import ctypes
import fcntl
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import termios
from typing import Any

HOME = "/home/rig"
BASE_ENV = {
    "HOME": HOME,
    "USER": "rig",
    "LOGNAME": "rig",
    "SHELL": "/bin/bash",
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "LANG": "C.UTF-8",
}
WORKDIR = HOME if os.path.isdir(HOME) else "/"
DRAIN_AFTER_EXIT_S = 0.2  # background jobs may keep the pipes open; stop reading shortly after the exit


async def read_frame(reader: asyncio.StreamReader) -> tuple[bytes, bytes]:
    head = await reader.readexactly(5)
    kind, length = head[:1], struct.unpack("!I", head[1:])[0]
    return kind, await reader.readexactly(length)


def frame(kind: bytes, payload: bytes) -> bytes:
    return kind + struct.pack("!I", len(payload)) + payload


def kill_group(pid: int, sig: int = signal.SIGKILL) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def spawn_command(cmd: str, with_stdin: bool) -> "subprocess.Popen[bytes]":
    return subprocess.Popen(
        ["/bin/bash", "-lc", cmd],
        stdin=subprocess.PIPE if with_stdin else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=WORKDIR,
        env=dict(BASE_ENV, TERM="dumb"),
        start_new_session=True,
        close_fds=True,
    )


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


async def do_exec(req: dict[str, Any], reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    # Popen plus a pidfd rather than asyncio's subprocess: asyncio's wait() also waits for the pipes to close,
    # and a command that starts a background job (a dev server) leaves them open for as long as the job runs.
    loop = asyncio.get_running_loop()
    proc = spawn_command(req["cmd"], bool(req.get("stdin")))
    exited: asyncio.Future[None] = loop.create_future()
    pidfd = os.pidfd_open(proc.pid)

    def on_exit() -> None:
        if not exited.done():
            exited.set_result(None)

    loop.add_reader(pidfd, on_exit)
    open_pipes: dict[int, bytes] = {}
    drained = asyncio.Event()
    for stream, kind in ((proc.stdout, b"O"), (proc.stderr, b"R")):
        assert stream is not None
        fd = stream.fileno()
        os.set_blocking(fd, False)
        open_pipes[fd] = kind

        def readable(fd: int = fd) -> None:
            try:
                data = os.read(fd, 65536)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if data:
                writer.write(frame(open_pipes[fd], data))
                return
            loop.remove_reader(fd)
            del open_pipes[fd]
            if not open_pipes:
                drained.set()

        loop.add_reader(fd, readable)

    async def feed() -> None:
        assert proc.stdin is not None
        stdin_fd = proc.stdin.fileno()
        try:
            while True:
                kind, data = await read_frame(reader)
                if kind == b"I":
                    await loop.run_in_executor(None, write_all, stdin_fd, data)
                elif kind == b"E":
                    break
        except (asyncio.IncompleteReadError, ConnectionError, OSError):
            pass
        finally:
            with contextlib.suppress(Exception):
                proc.stdin.close()

    feeder = asyncio.ensure_future(feed()) if req.get("stdin") else None
    timed_out = False
    try:
        await asyncio.wait_for(asyncio.shield(exited), req.get("timeout"))
    except TimeoutError:
        timed_out = True
        kill_group(proc.pid)
        await exited
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(drained.wait(), DRAIN_AFTER_EXIT_S)
    for fd in list(open_pipes):
        loop.remove_reader(fd)
    loop.remove_reader(pidfd)
    os.close(pidfd)
    for stream in (proc.stdout, proc.stderr):
        assert stream is not None
        stream.close()
    if feeder is not None:
        feeder.cancel()
    returncode = proc.wait()
    code = returncode if returncode >= 0 else 128 - returncode
    writer.write(frame(b"X", json.dumps({"code": code, "timed_out": timed_out}).encode()))
    await writer.drain()


def set_size(fd: int, cols: int, rows: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def spawn_shell(slave: int, env: dict[str, str]) -> "subprocess.Popen[bytes]":
    def make_controlling() -> None:
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    return subprocess.Popen(
        ["/bin/bash", "-l"],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        cwd=WORKDIR,
        env=env,
        start_new_session=True,
        preexec_fn=make_controlling,
        close_fds=True,
    )


async def do_pty(req: dict[str, Any], reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    loop = asyncio.get_running_loop()
    master, slave = os.openpty()
    set_size(master, int(req["cols"]), int(req["rows"]))
    env = dict(BASE_ENV, TERM="xterm-256color", COLORTERM="truecolor")

    proc = spawn_shell(slave, env)
    os.close(slave)
    os.set_blocking(master, False)
    output: asyncio.Queue[bytes] = asyncio.Queue()

    def readable() -> None:
        try:
            data = os.read(master, 65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            loop.remove_reader(master)
        output.put_nowait(data)

    loop.add_reader(master, readable)

    async def outbound() -> None:
        while True:
            data = await output.get()
            if not data:
                return
            writer.write(frame(b"D", data))
            await writer.drain()

    async def inbound() -> None:
        try:
            while True:
                kind, data = await read_frame(reader)
                if kind == b"D":
                    view = memoryview(data)
                    while view:
                        try:
                            view = view[os.write(master, view) :]
                        except BlockingIOError:
                            await asyncio.sleep(0.005)
                elif kind == b"W":
                    size = json.loads(data)
                    set_size(master, int(size["cols"]), int(size["rows"]))
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(proc.pid, signal.SIGWINCH)
        except (asyncio.IncompleteReadError, ConnectionError, OSError):
            pass

    out_task = asyncio.ensure_future(outbound())
    in_task = asyncio.ensure_future(inbound())
    await asyncio.wait({out_task, in_task}, return_when=asyncio.FIRST_COMPLETED)
    if not out_task.done():  # the host hung up: hang up the terminal
        kill_group(proc.pid, signal.SIGHUP)
        await asyncio.sleep(0.05)
        kill_group(proc.pid)
        out_task.cancel()
    in_task.cancel()
    with contextlib.suppress(OSError):
        loop.remove_reader(master)
    os.close(master)
    code = await loop.run_in_executor(None, proc.wait)
    with contextlib.suppress(Exception):
        writer.write(frame(b"X", json.dumps({"code": code}).encode()))
        await writer.drain()


async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        _kind, data = await read_frame(reader)
        req = json.loads(data)
        if req.get("op") == "exec":
            await do_exec(req, reader, writer)
        elif req.get("op") == "pty":
            await do_pty(req, reader, writer)
        else:
            writer.write(frame(b"X", b'{"ok": true}'))
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def main(fd: int) -> None:
    sock = socket.socket(fileno=fd)
    sock.set_inheritable(False)
    server = await asyncio.start_unix_server(handle, sock=sock)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    # Not dumpable: processes of the same user cannot read this agent's memory or take its descriptors.
    with contextlib.suppress(Exception):
        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE
    asyncio.run(main(int(sys.argv[1])))
