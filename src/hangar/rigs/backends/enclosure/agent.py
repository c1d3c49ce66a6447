"""The agent inside a rig: runs commands and terminals for the host. Standard library only, run by the image's
own python3 as the rig user (``python3 -I -S agent.py <listening-fd>``); it is never imported by the server.
Threads and ``selectors`` rather than asyncio: importing asyncio costs more than everything else at boot.

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

import contextlib
import fcntl
import json
import os
import selectors
import signal
import socket
import struct
import subprocess
import sys
import termios
import threading
import time
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


def recv_exactly(conn: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


def read_frame(conn: socket.socket) -> tuple[bytes, bytes]:
    head = recv_exactly(conn, 5)
    return head[:1], recv_exactly(conn, struct.unpack("!I", head[1:])[0])


def frame(kind: bytes, payload: bytes) -> bytes:
    return kind + struct.pack("!I", len(payload)) + payload


def kill_group(pid: int, sig: int = signal.SIGKILL) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def do_exec(req: dict[str, Any], conn: socket.socket) -> None:
    with_stdin = bool(req.get("stdin"))
    proc = subprocess.Popen(
        ["/bin/bash", "-lc", req["cmd"]],
        stdin=subprocess.PIPE if with_stdin else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=WORKDIR,
        env=dict(BASE_ENV, TERM="dumb"),
        start_new_session=True,
        close_fds=True,
    )
    if with_stdin:
        threading.Thread(target=feed_stdin, args=(proc, conn), daemon=True).start()
    assert proc.stdout is not None and proc.stderr is not None
    # A pidfd says when the command exits; the pipes may stay open after that (a background dev server).
    pidfd = os.pidfd_open(proc.pid)
    kinds = {proc.stdout.fileno(): b"O", proc.stderr.fileno(): b"R"}
    sel = selectors.DefaultSelector()
    for fd in kinds:
        os.set_blocking(fd, False)
        sel.register(fd, selectors.EVENT_READ)
    sel.register(pidfd, selectors.EVENT_READ)
    timeout = req.get("timeout")
    deadline = None if timeout is None else time.monotonic() + float(timeout)
    exited_at = None
    timed_out = False
    while kinds or exited_at is None:
        now = time.monotonic()
        if exited_at is not None and now - exited_at > DRAIN_AFTER_EXIT_S:
            break
        wait = None if deadline is None else max(0.0, deadline - now)
        if exited_at is not None:
            wait = max(0.0, exited_at + DRAIN_AFTER_EXIT_S - now)
        events = sel.select(wait)
        if not events and exited_at is None and deadline is not None and time.monotonic() >= deadline:
            timed_out = True
            kill_group(proc.pid)
            deadline = None
            continue
        for key, _ in events:
            fd = int(key.fd)
            if fd == pidfd:
                sel.unregister(pidfd)
                exited_at = time.monotonic()
                continue
            try:
                data = os.read(fd, 65536)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            if data:
                conn.sendall(frame(kinds[fd], data))
            else:
                sel.unregister(fd)
                del kinds[fd]
    sel.close()
    os.close(pidfd)
    proc.stdout.close()
    proc.stderr.close()
    returncode = proc.wait()
    code = returncode if returncode >= 0 else 128 - returncode
    conn.sendall(frame(b"X", json.dumps({"code": code, "timed_out": timed_out}).encode()))


def feed_stdin(proc: "subprocess.Popen[bytes]", conn: socket.socket) -> None:
    assert proc.stdin is not None
    try:
        while True:
            kind, data = read_frame(conn)
            if kind == b"I":
                write_all(proc.stdin.fileno(), data)
            elif kind == b"E":
                break
    except (EOFError, OSError):
        pass
    finally:
        with contextlib.suppress(OSError):
            proc.stdin.close()


def set_size(fd: int, cols: int, rows: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def do_pty(req: dict[str, Any], conn: socket.socket) -> None:
    master, slave = os.openpty()
    set_size(master, int(req["cols"]), int(req["rows"]))

    def make_controlling() -> None:
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    proc = subprocess.Popen(
        ["/bin/bash", "-l"],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        cwd=WORKDIR,
        env=dict(BASE_ENV, TERM="xterm-256color", COLORTERM="truecolor"),
        start_new_session=True,
        preexec_fn=make_controlling,
        close_fds=True,
    )
    os.close(slave)

    def inbound() -> None:
        try:
            while True:
                kind, data = read_frame(conn)
                if kind == b"D":
                    write_all(master, data)
                elif kind == b"W":
                    size = json.loads(data)
                    set_size(master, int(size["cols"]), int(size["rows"]))
                    kill_group(proc.pid, signal.SIGWINCH)
        except (EOFError, OSError, ValueError):
            pass
        # the host hung up: hang up the terminal
        kill_group(proc.pid, signal.SIGHUP)
        time.sleep(0.05)
        kill_group(proc.pid)

    threading.Thread(target=inbound, daemon=True).start()
    try:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:
                data = b""
            if not data:
                break
            conn.sendall(frame(b"D", data))
    except OSError:
        pass
    code = proc.wait()
    os.close(master)
    with contextlib.suppress(OSError):
        conn.sendall(frame(b"X", json.dumps({"code": code}).encode()))


def handle(conn: socket.socket) -> None:
    try:
        _kind, data = read_frame(conn)
        req = json.loads(data)
        if req.get("op") == "exec":
            do_exec(req, conn)
        elif req.get("op") == "pty":
            do_pty(req, conn)
        else:
            conn.sendall(frame(b"X", b'{"ok": true}'))
    except (EOFError, OSError, ValueError):
        pass
    finally:
        conn.close()


def main(fd: int) -> None:
    listener = socket.socket(fileno=fd)
    listener.set_inheritable(False)
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=handle, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    # Not dumpable: processes of the same user cannot read this agent's memory or take its descriptors.
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE
    main(int(sys.argv[1]))
