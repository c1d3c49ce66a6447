"""A program of the host run over hostile input, confined: a decoder fed an upload (ffmpeg), an analyser fed a
skill's scripts (bandit, shellcheck), the diarisation's arrays fed a meeting's audio. Whoever wrote the input may
have written it to break the program, so the program never runs as the server on the host.

Each run is a bubblewrap sandbox of its own: new user, PID, network, IPC, UTS and mount namespaces (no network but
a loopback of its own), an unprivileged uid, no capabilities, a new session, the host's ``/usr`` read-only (and the
server's Python when asked), nothing else of the host: only the ``mounts`` given are readable (read-only), only
``out_dir`` is writable (at ``/out``), a fresh ``/tmp`` of its own, an empty environment but ``PATH``, ``HOME`` and
``LANG``. Descriptors the server opened (``fds``) are handed on as they are, so a file the server reads on its own
records is read by the program without a path. ``ToolLimits`` bounds it: a wall-clock deadline after which its
whole process group is killed, and resource limits set before bubblewrap starts (CPU seconds, address space, the
size of a file it writes, its processes and threads), and what it prints is kept up to a bound (the rest is read
and dropped, so the program is never blocked on a full pipe).

The process bound is set inside the sandbox (``prlimit``, in its own user namespace), so it counts the sandbox's
processes only; the kernel does not apply it to processes of root's uid, so where the server runs as root it
holds only for a server run as another user. Where bubblewrap is missing, callers refuse the work, or, where
the server owner switched on trusted host execution (``hangar.core.confine``), run it with ``confined=False``: the
same resource limits and deadline, the mounts' host paths in place of their guest paths, no namespaces, and no
process bound (it would count every process of the server's user).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import resource
import signal
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

NOBODY = 65534
GUEST_OUT = "/out"
GUEST_TMP = "/tmp"
MiB = 1 << 20


@dataclass(frozen=True)
class ToolLimits:
    """What one run may take: ``seconds`` of wall clock (then its process group is killed), ``cpu_s`` CPU seconds
    (SIGXCPU past them, SIGKILL a second later),
    ``memory`` bytes of address space, ``file_size`` bytes in any file it writes (past it the write fails and the
    program gets SIGXFSZ), ``processes`` processes and threads, ``output`` bytes of stdout kept and ``errors``
    bytes of stderr kept (its last)."""

    seconds: float
    cpu_s: int
    memory: int
    file_size: int = 64 * MiB
    processes: int = 64
    output: int = 4 * MiB
    errors: int = 64 * 1024


@dataclass(frozen=True)
class Ran:
    code: int | None  # None: killed at its deadline; negative: killed by that signal (unconfined runs)
    stdout: bytes  # empty when it went to ``on_stdout``
    stderr: bytes
    overflowed: bool  # stdout passed ``ToolLimits.output``; the rest was dropped

    def ended_by(self, sig: int) -> bool:
        """Whether the program was ended by signal ``sig`` (bubblewrap exits 128 + the signal of its program)."""
        return self.code is not None and self.code in (-sig, 128 + sig)


def python_mounts() -> list[tuple[Path, str]]:
    """The server's Python (a virtual environment, its base installation) where it lies outside ``/usr``, each
    at its own path."""
    out: list[tuple[Path, str]] = []
    for prefix in dict.fromkeys((sys.prefix, sys.base_prefix, os.path.realpath(sys.prefix))):
        if not prefix.startswith("/usr"):
            out.append((Path(prefix), prefix))
    return out


def sandbox_argv(
    argv: Sequence[str],
    mounts: Sequence[tuple[Path, str]] = (),
    out_dir: Path | None = None,
    workdir: str = GUEST_TMP,
    env: Mapping[str, str] | None = None,
    processes: int = ToolLimits.processes,
) -> list[str]:
    """bubblewrap around ``argv``: each ``(host path, guest path)`` of ``mounts`` bound read-only, ``out_dir``
    writable at ``/out``, ``argv`` started in ``workdir`` with at most ``processes`` processes and threads."""
    binds: list[str] = []
    for host, guest in mounts:
        binds += ["--ro-bind", str(host), guest]
    if out_dir is not None:
        binds += ["--bind", str(out_dir), GUEST_OUT]
    setenv: list[str] = []
    for key, value in {"PATH": "/usr/bin:/bin", "HOME": GUEST_TMP, "LANG": "C.UTF-8", **(env or {})}.items():
        setenv += ["--setenv", key, value]
    return [
        "bwrap", "--unshare-all", "--uid", str(NOBODY), "--gid", str(NOBODY), "--die-with-parent", "--new-session",
        "--cap-drop", "ALL",
        # Debian reaches some libraries (ffmpeg's BLAS) through /etc/alternatives.
        "--ro-bind", "/usr", "/usr", "--ro-bind-try", "/etc/alternatives", "/etc/alternatives",
        "--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache",
        "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
        "--symlink", "usr/bin", "/bin", "--symlink", "usr/sbin", "/sbin",
        "--proc", "/proc", "--dev", "/dev", "--tmpfs", GUEST_TMP,
        *binds, "--chdir", workdir, "--clearenv", *setenv,
        # The process bound is set inside the sandbox's own user namespace, where the kernel counts only the
        # sandbox's processes; set before bubblewrap starts, it would count every process of the server's user.
        "--", "prlimit", f"--nproc={processes}:{processes}", "--", *argv,
    ]  # fmt: skip


def _limiter(limits: ToolLimits) -> Callable[[], None]:
    def apply() -> None:  # in the child, before bubblewrap (or the program) starts
        resource.setrlimit(resource.RLIMIT_AS, (limits.memory, limits.memory))
        # SIGXCPU at the limit (a soft limit below the hard one, so its end tells which limit it passed).
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_s, limits.cpu_s + 1))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_size, limits.file_size))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    return apply


def _host_argv(argv: Sequence[str], mounts: Sequence[tuple[Path, str]], out_dir: Path | None) -> list[str]:
    """``argv`` for an unconfined run: an argument naming a guest path (or a file under one) names the host's."""
    places = [(guest, str(host)) for host, guest in mounts]
    if out_dir is not None:
        places.append((GUEST_OUT, str(out_dir)))
    out: list[str] = []
    for arg in argv:
        for guest, host in places:
            if arg == guest or arg.startswith(guest + "/"):
                arg = host + arg[len(guest) :]
                break
        out.append(arg)
    return out


async def run_tool(
    argv: Sequence[str],
    limits: ToolLimits,
    *,
    mounts: Sequence[tuple[Path, str]] = (),
    out_dir: Path | None = None,
    fds: Sequence[int] = (),
    workdir: str = GUEST_TMP,
    env: Mapping[str, str] | None = None,
    on_stdout: Callable[[bytes], None] | None = None,
    confined: bool = True,
) -> Ran:
    """Run ``argv`` confined (see the module docstring); its stdout kept, or handed to ``on_stdout`` chunk by
    chunk, up to ``limits.output`` bytes. OSError when the sandbox cannot start."""
    if confined:
        full = sandbox_argv(argv, mounts, out_dir, workdir, env, limits.processes)
        cwd = None
    else:
        full = _host_argv(argv, mounts, out_dir)
        cwd = str(out_dir) if out_dir is not None else None
    base = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/"), "LANG": "C.UTF-8"}
    proc = await asyncio.create_subprocess_exec(
        *full,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=base if confined else {**base, **(env or {})},
        cwd=cwd,
        start_new_session=True,
        pass_fds=tuple(fds),
        preexec_fn=_limiter(limits),
    )
    assert proc.stdout is not None and proc.stderr is not None
    kept = bytearray()
    overflowed = False

    async def read_out(stream: asyncio.StreamReader) -> None:
        nonlocal overflowed
        taken = 0
        while chunk := await stream.read(1 << 16):
            piece = chunk[: max(0, limits.output - taken)]
            if len(piece) < len(chunk):
                overflowed = True  # past the bound: read and dropped, so the program is not blocked
            if not piece:
                continue
            taken += len(piece)
            if on_stdout is not None:
                on_stdout(piece)
            else:
                kept.extend(piece)

    async def read_err(stream: asyncio.StreamReader) -> bytes:
        tail = b""
        while chunk := await stream.read(1 << 14):
            tail = (tail + chunk)[-limits.errors :]
        return tail

    try:
        _, err, code = await asyncio.wait_for(
            asyncio.gather(read_out(proc.stdout), read_err(proc.stderr), proc.wait()), limits.seconds
        )
    except TimeoutError:
        return Ran(None, b"", b"", overflowed)
    finally:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()
    return Ran(code, bytes(kept), err, overflowed)
