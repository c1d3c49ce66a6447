"""The agent inside a rig: runs commands and terminals for the host. Run by the image's own python3 as the rig
user (``python3 -I -S agent.py <listening-fd>``); never imported by the server.

Startup time is most of a rig's boot, so the agent imports only built-in modules (``_socket``, ``_thread``,
``select``, ``os``...): no asyncio, subprocess, json or enum, each of which costs more than the rest of a boot
on a busy machine. Children are started with ``posix_spawn`` in their own session.

The host creates the listening Unix socket outside the rig and passes it in as an inherited descriptor, so no
path inside the rig leads to it. One connection carries one request. Frames are a type byte, a 4-byte
big-endian length and the payload. Requests and replies are flat maps encoded as ``key NUL value NUL ...``.
The first frame from the host is ``J`` with the request:

- ``op=ping`` -> ``X ok=1``
- ``op=exec cmd=<text> timeout=<seconds or empty> stdin=<0|1>``; with stdin the host then sends ``I`` chunks
  and one ``E``; the agent sends ``O`` (stdout) and ``R`` (stderr) chunks, then ``X code=<n> timed_out=<0|1>``.
  Instead of ``cmd`` (run with ``bash -lc``) a request may carry ``argc=<n>`` and ``arg.0`` .. ``arg.<n-1>``
  (run through ``env -C <cwd>``, so argv[0] is looked up on the rig's PATH), ``cwd=<guest dir>`` and
  ``env.<NAME>=<value>`` entries added to the rig user's base environment. The host closing the connection
  before ``X`` kills the command's process group (an interrupted step or agent). With ``reap=1`` the command
  is contained (``supervise``): whatever it leaves running is killed when it exits, and killing it kills all
  it started, in whatever session or group. A request of any op the agent could not carry out (a fork
  refused, a bad field) is answered ``X failed=<what went wrong>``.
- ``op=read path=<guest path>``: the agent opens the file as the rig user (the kernel's permission checks, the
  rig's own root and /proc) and sends ``O`` chunks, then ``X ok=1``; or ``X error=<kind> message=<text>``
  with kind ``notfound``, ``refused`` or ``exists``.
- ``op=write path=<guest path> exclusive=<0|1>``: creates missing parent directories and the file as the rig
  user (never following a symlink at the last component) and answers ``K`` when it is open (or an ``X`` error
  as for ``read``); the host then sends ``I`` chunks and one ``E``, and the agent answers ``X ok=1``.
- ``op=pty cols=<n> rows=<n>``; both sides send ``D`` data; the host sends ``W cols=<n> rows=<n>`` to resize;
  the agent sends ``X code=<n>`` when the shell exits. The host closing the connection hangs the terminal up.
"""

import _socket
import _thread
import fcntl
import os
import select
import struct
import sys
import termios
import time

HOME = "/home/rig"
BASE_ENV = {
    "HOME": HOME,
    "USER": "rig",
    "LOGNAME": "rig",
    "SHELL": "/bin/bash",
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "LANG": "C.UTF-8",
}
SIGHUP, SIGKILL, SIGTERM = 1, 9, 15
PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER = 4, 36
DRAIN_AFTER_EXIT_S = 0.2  # background jobs may keep the pipes open; stop reading shortly after the exit
_hardened = False
_prctl = None  # libc's prctl, once ``harden`` has loaded it


def decode(payload: bytes) -> dict[str, str]:
    parts = payload.decode("utf-8", "surrogateescape").split("\0")
    return dict(zip(parts[0::2], parts[1::2], strict=False))


def encode(values: dict[str, object]) -> bytes:
    return "\0".join(f"{k}\0{v}" for k, v in values.items()).encode("utf-8", "surrogateescape")


def read_exactly(fd: int, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = os.read(fd, size - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


def read_frame(fd: int) -> tuple[bytes, bytes]:
    head = read_exactly(fd, 5)
    return head[:1], read_exactly(fd, struct.unpack("!I", head[1:])[0])


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def send(fd: int, kind: bytes, payload: bytes) -> None:
    write_all(fd, kind + struct.pack("!I", len(payload)) + payload)


def kill_group(pid: int, sig: int = SIGKILL) -> None:
    try:  # noqa: SIM105 - contextlib is not imported here, on purpose (startup time)
        os.killpg(pid, sig)
    except OSError:
        pass


def harden() -> None:
    """Not dumpable: processes of the rig user cannot read this agent's memory or take its descriptors.
    Done before the first child starts (importing ctypes at boot would slow every rig's start). Also loads
    what a supervisor needs, since a forked child must import nothing."""
    global _hardened, _prctl
    if not _hardened:
        _hardened = True
        try:
            import _signal  # type: ignore[import-not-found]  # noqa: F401 - loaded before any fork (``supervise``)
            import ctypes

            _prctl = ctypes.CDLL(None, use_errno=True).prctl
            _prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
        except Exception:
            pass


def spawn(argv: list[str], env: dict[str, str], actions: list[tuple[object, ...]]) -> int:
    harden()
    return os.posix_spawn(argv[0], argv, env, file_actions=actions, setsid=True)


def supervise(argv: list[str], env: dict[str, str], stdio: tuple[int, int, int]) -> int:
    """Start the command under a supervisor and return the supervisor's pid, which stands for the command: it
    exits with the command's status once nothing the command started is left. The supervisor is a forked
    child of this agent that becomes a child subreaper (``PR_SET_CHILD_SUBREAPER``), so every process the
    command leaves behind (a background job, a double fork, a new session) is handed to it rather than to the
    rig's PID 1, and is killed when the command exits. ``SIGTERM`` makes it kill the command and all of it."""
    harden()
    pid = os.fork()
    if pid:
        return pid
    code = 126
    try:
        code = _supervised(argv, env, stdio)
    finally:
        os._exit(code)


def _supervised(argv: list[str], env: dict[str, str], stdio: tuple[int, int, int]) -> int:
    import _signal  # the C module: ``signal`` imports enum (startup time)

    for target, fd in enumerate(stdio):
        os.dup2(fd, target)
    os.closerange(3, 1 << 20)  # nothing of the agent's: the listener, other requests' pipes and connections
    if _prctl is None or _prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        os.write(2, b"hangar: the command cannot be contained (no child subreaper), so it is not run\n")
        return 126
    state = {"command": 0, "ended": 0, "stopping": 0}

    def stop(_signum: int, _frame: object) -> None:
        state["stopping"] = 1
        if state["command"] and not state["ended"]:
            kill_group(state["command"])
        kill_children()

    _signal.signal(SIGTERM, stop)
    state["command"] = command = os.posix_spawn(argv[0], argv, env, setsid=True)
    if state["stopping"]:
        kill_group(command)
    code = 128 + SIGKILL
    while True:
        try:
            pid, status = os.wait()  # the command, or a process handed over because its parent died
        except ChildProcessError:
            return code
        if pid == command:
            state["ended"] = 1
            code = os.waitstatus_to_exitcode(status)
            code = code if code >= 0 else 128 - code
        if state["ended"] or state["stopping"]:
            try:
                os.waitpid(-1, os.WNOHANG)  # most commands leave nothing: then there is nothing to look for
            except ChildProcessError:
                return code
            kill_children()


def kill_children() -> None:
    """SIGKILL every child of this process (found by parent pid in the rig's /proc): the ones handed over to
    a subreaper. Their own children are handed over as they die, and killed on the next round."""
    me = str(os.getpid())
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/" + entry + "/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if fields[1].decode() == me:  # field 4: the parent's pid
            try:  # noqa: SIM105
                os.kill(int(entry), SIGKILL)
            except OSError:
                pass


def exit_code(pid: int) -> int:
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    return code if code >= 0 else 128 - code


def do_exec(req: dict[str, str], conn: int) -> None:
    with_stdin = req.get("stdin") == "1"
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    in_r, in_w = os.pipe() if with_stdin else (os.open(os.devnull, os.O_RDONLY), -1)
    actions: list[tuple[object, ...]] = [
        (os.POSIX_SPAWN_DUP2, in_r, 0),
        (os.POSIX_SPAWN_DUP2, out_w, 1),
        (os.POSIX_SPAWN_DUP2, err_w, 2),
    ]
    env = dict(BASE_ENV, TERM="dumb")
    env.update({k[4:]: v for k, v in req.items() if k.startswith("env.") and k[4:] and "=" not in k[4:]})
    contained = req.get("reap") == "1"
    if contained:
        pid = supervise(command_argv(req), env, (in_r, out_w, err_w))
    else:
        pid = spawn(command_argv(req), env, actions)
    for fd in (in_r, out_w, err_w):
        os.close(fd)
    finished = [False]
    heard_all = _thread.allocate_lock()
    heard_all.acquire()  # released once the host has hung up (``watch_host`` read its every frame)
    _thread.start_new_thread(watch_host, (conn, in_w, pid, finished, contained, heard_all))
    # A pidfd says when the command exits; the pipes may stay open after that (a background dev server).
    pidfd = os.pidfd_open(pid)
    kinds = {out_r: b"O", err_r: b"R"}
    poller = select.poll()
    for fd in (out_r, err_r, pidfd):
        poller.register(fd, select.POLLIN)
    timeout = req.get("timeout") or ""
    deadline = time.monotonic() + float(timeout) if timeout else None
    exited_at = None
    timed_out = False
    wait: float | None
    while kinds or exited_at is None:
        now = time.monotonic()
        if exited_at is not None:
            if now - exited_at > DRAIN_AFTER_EXIT_S:
                break
            wait = exited_at + DRAIN_AFTER_EXIT_S - now
        else:
            wait = None if deadline is None else max(0.0, deadline - now)
        events = poller.poll(None if wait is None else int(wait * 1000) + 1)
        if not events and exited_at is None and deadline is not None and time.monotonic() >= deadline:
            timed_out = True
            end(pid, contained)
            deadline = None
            continue
        for fd, _ in events:
            if fd == pidfd:
                poller.unregister(pidfd)
                exited_at = time.monotonic()
                continue
            try:
                data = os.read(fd, 65536)
            except OSError:
                data = b""
            if data:
                send(conn, kinds[fd], data)
            else:
                poller.unregister(fd)
                del kinds[fd]
    for fd in (out_r, err_r, pidfd):
        os.close(fd)
    code = exit_code(pid)
    finished[0] = True  # from here the pid may be reused: the watcher must not signal it
    send(conn, b"X", encode({"code": code, "timed_out": int(timed_out)}))
    # Not closed before the host hangs up (it does on reading X): a socket closed with frames of the host still
    # unread resets the connection, and the host's stream then drops the X it had received but not yet read.
    heard_all.acquire()


def command_argv(req: dict[str, str]) -> list[str]:
    if "argc" not in req:
        return ["/bin/bash", "-lc", req["cmd"]]
    argv = [req["arg." + str(i)] for i in range(int(req["argc"]))]
    return ["/usr/bin/env", "-C", req.get("cwd") or HOME, "--", *argv]


def end(pid: int, contained: bool) -> None:
    """Kill a command started by ``do_exec``: its supervisor kills a contained one, else its process group."""
    if not contained:
        kill_group(pid)
        return
    try:  # noqa: SIM105
        os.kill(pid, SIGTERM)
    except OSError:
        pass


def watch_host(
    conn: int, in_w: int, pid: int, finished: list[bool], contained: bool, heard_all: _thread.LockType
) -> None:
    """Feeds stdin frames (``in_w`` is -1 without stdin) and notices the host hanging up: an interrupted
    request must not leave its command running. Input the command no longer takes (it closed its stdin or
    exited) is read and dropped: every frame of the host is read before the connection is closed."""
    try:
        while True:
            kind, data = read_frame(conn)
            if kind == b"I" and in_w >= 0:
                try:
                    write_all(in_w, data)
                except OSError:  # the command stopped reading: the rest of its input goes nowhere
                    os.close(in_w)
                    in_w = -1
            elif kind == b"E" and in_w >= 0:
                os.close(in_w)
                in_w = -1
    except (EOFError, OSError):
        pass
    if in_w >= 0:
        os.close(in_w)
    if not finished[0]:
        end(pid, contained)
    heard_all.release()


def set_size(fd: int, cols: int, rows: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))  # the kernel sends SIGWINCH


def type_keys(master: int, data: bytes, finished: list[bool]) -> None:
    """Write keystrokes to the terminal as fast as the shell takes them; once it has exited, drop the rest."""
    view = memoryview(data)
    while view and not finished[0]:
        try:
            view = view[os.write(master, view) :]
        except BlockingIOError:
            select.select([], [master], [], 0.1)
        except OSError:
            return


def do_pty(req: dict[str, str], conn: int) -> None:
    master, slave = os.openpty()
    set_size(master, int(req["cols"]), int(req["rows"]))
    # Opened (not inherited) after setsid, the terminal becomes the new session's controlling terminal.
    actions: list[tuple[object, ...]] = [
        (os.POSIX_SPAWN_OPEN, 0, os.ttyname(slave), os.O_RDWR, 0),
        (os.POSIX_SPAWN_DUP2, 0, 1),
        (os.POSIX_SPAWN_DUP2, 0, 2),
    ]
    pid = spawn(["/bin/bash", "-l"], dict(BASE_ENV, TERM="xterm-256color", COLORTERM="truecolor"), actions)
    os.close(slave)
    finished = [False]
    heard_all = _thread.allocate_lock()
    heard_all.acquire()  # released once the host has hung up, its every frame read

    def inbound() -> None:
        try:
            while True:
                kind, data = read_frame(conn)
                if kind == b"D":
                    type_keys(master, data, finished)
                elif kind == b"W":
                    size = decode(data)
                    set_size(master, int(size["cols"]), int(size["rows"]))
        except (EOFError, OSError, ValueError, KeyError):
            pass
        if not finished[0]:  # the host hung up on a live shell: hang up the terminal (once reaped, the pid is free)
            kill_group(pid, SIGHUP)
            time.sleep(0.05)
            kill_group(pid)
        heard_all.release()

    # Non-blocking both ways: a write into a full input queue blocks, and a shell that exits does not wake it.
    os.set_blocking(master, False)
    _thread.start_new_thread(inbound, ())
    readable = select.poll()
    readable.register(master, select.POLLIN)
    try:
        while True:
            readable.poll()
            try:
                data = os.read(master, 65536)
            except BlockingIOError:
                continue
            except OSError:  # EIO: the terminal's last process closed it
                data = b""
            if not data:
                break
            send(conn, b"D", data)
    except OSError:
        pass
    code = exit_code(pid)
    finished[0] = True
    try:
        send(conn, b"X", encode({"code": code}))
    except OSError:
        pass
    else:
        # As for exec: closed with keystrokes of the host unread, the connection would reset and the host lose
        # the X it had not read yet. The host hangs up on reading X.
        heard_all.acquire()
    os.close(master)


def file_error(conn: int, exc: OSError) -> None:
    kinds = {2: "notfound", 17: "exists", 20: "refused", 21: "refused", 13: "refused", 1: "refused", 40: "refused"}
    kind = kinds.get(exc.errno or 0, "refused")
    send(conn, b"X", encode({"error": kind, "message": os.strerror(exc.errno or 1)}))


def open_regular(conn: int, path: str, flags: int) -> int:
    """A blocking descriptor of the regular file at ``path`` (never following a symlink at its last
    component), or -1 after the refusal was sent to the host."""
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        file_error(conn, exc)
        return -1
    if (os.fstat(fd).st_mode & 0o170000) != 0o100000:
        os.close(fd)
        send(conn, b"X", encode({"error": "refused", "message": "not a regular file"}))
        return -1
    os.set_blocking(fd, True)
    return fd


def do_read(req: dict[str, str], conn: int) -> None:
    fd = open_regular(conn, req["path"], os.O_RDONLY)
    if fd < 0:
        return
    try:
        while True:
            try:
                data = os.read(fd, 65536)
            except OSError as exc:
                file_error(conn, exc)
                return
            if not data:
                break
            send(conn, b"O", data)
        send(conn, b"X", encode({"ok": 1}))
    finally:
        os.close(fd)


def do_write(req: dict[str, str], conn: int) -> None:
    path = req["path"]
    parent = path.rsplit("/", 1)[0]
    try:
        if parent:
            os.makedirs(parent, 0o755, exist_ok=True)
    except OSError as exc:  # a component is a file, a dangling link, or not the rig user's to write
        send(conn, b"X", encode({"error": "refused", "message": os.strerror(exc.errno or 1)}))
        return
    exclusive = os.O_EXCL if req.get("exclusive") == "1" else os.O_TRUNC
    fd = open_regular(conn, path, os.O_WRONLY | os.O_CREAT | exclusive)
    if fd < 0:
        return
    try:
        send(conn, b"K", b"")
        while True:
            kind, data = read_frame(conn)
            if kind == b"E":
                break
            if kind == b"I":
                write_all(fd, data)
        send(conn, b"X", encode({"ok": 1}))
    except OSError as exc:
        file_error(conn, exc)
    finally:
        os.close(fd)


def handle(conn: int) -> None:
    try:
        _kind, data = read_frame(conn)
        req = decode(data)
        if req.get("op") == "exec":
            do_exec(req, conn)
        elif req.get("op") == "pty":
            do_pty(req, conn)
        elif req.get("op") == "read":
            do_read(req, conn)
        elif req.get("op") == "write":
            do_write(req, conn)
        else:
            send(conn, b"X", encode({"ok": 1}))
    except EOFError:
        pass
    except (OSError, ValueError, KeyError) as exc:
        # Said, not dropped: the host names it (a host that hung up first hears nothing, as it asked).
        try:  # noqa: SIM105 - contextlib is not imported here, on purpose (startup time)
            send(conn, b"X", encode({"failed": type(exc).__name__ + ": " + str(exc)}))
        except OSError:
            pass
    finally:
        os.close(conn)


def main(fd: int) -> None:
    listener = _socket.socket(fileno=fd)
    os.set_inheritable(fd, False)
    os.chdir(HOME if os.path.isdir(HOME) else "/")
    while True:
        conn, _ = listener._accept()  # type: ignore[attr-defined]  # the C socket's accept: a bare fd
        _thread.start_new_thread(handle, (conn,))


if __name__ == "__main__":
    main(int(sys.argv[1]))
