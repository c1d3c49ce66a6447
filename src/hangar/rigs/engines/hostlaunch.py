"""Run an engine directly on this host, outside any rig: the conformance tests of the protocol clients and the
benchmark's side-by-side baseline use it. Rigs never do (the enclosure backend runs the same recipe inside a
rig). Each launch gets its own temporary home and a free loopback port, so launches never share a profile."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import tempfile
from collections.abc import AsyncIterator
from importlib import resources
from pathlib import Path

from hangar.errors import Unavailable
from hangar.rigs.engines.launch import LISTEN_POLL_S, Endpoint, EngineProcess, LaunchContext
from hangar.rigs.engines.registry import recipe_for
from hangar.rigs.engines.session import EngineSession


def home_page_url() -> str:
    return (Path(str(resources.files("hangar.rigs.images") / "home" / "home.html"))).resolve().as_uri()


def _tail(log: Path, chars: int) -> str:
    return log.read_text(errors="replace")[-chars:]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _listening(port: int, deadline: float, procs: list[asyncio.subprocess.Process], log: Path) -> None:
    loop = asyncio.get_running_loop()
    while loop.time() < deadline:
        for proc in procs:
            if proc.returncode is not None:
                tail = _tail(log, 1500)
                raise Unavailable(f"the engine exited with code {proc.returncode} before listening: {tail}")
        with contextlib.suppress(OSError):
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
            return
        await asyncio.sleep(LISTEN_POLL_S)
    raise Unavailable(f"the engine did not listen on port {port} in time")


async def _spawn(process: EngineProcess, home: str, log_fd: int) -> asyncio.subprocess.Process:
    env = {"HOME": home, "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", **process.env}
    return await asyncio.create_subprocess_exec(
        *process.argv, cwd=home, env=env, stdin=asyncio.subprocess.DEVNULL, stdout=log_fd, stderr=log_fd,
        start_new_session=True,
    )  # fmt: skip


def _kill(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)


@contextlib.asynccontextmanager
async def host_engine(
    engine: str, *, width: int = 1280, height: int = 800, home_url: str | None = None, ca_file: str | None = None
) -> AsyncIterator[EngineSession]:
    """A connected session to ``engine`` launched on this host; everything it started is killed on exit."""
    recipe = recipe_for(engine)
    with tempfile.TemporaryDirectory(prefix=f"hangar-{engine}-") as home:
        ctx = LaunchContext(home, free_port(), width, height, home_url or home_page_url(), ca_file)
        plan = recipe.plan(ctx)
        for relative, content in plan.files.items():
            target = Path(home) / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
        log = Path(home) / "engine.log"
        log_fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        procs: list[asyncio.subprocess.Process] = []
        try:
            for step in plan.setup:
                proc = await _spawn(step, home, log_fd)
                if await proc.wait() != 0:
                    raise Unavailable(f"{step.name} failed: {_tail(log, 800)}")
            for process in plan.processes:
                procs.append(await _spawn(process, home, log_fd))
            loop = asyncio.get_running_loop()
            await _listening(ctx.port, loop.time() + recipe.boot_timeout_s, procs, log)
            session = await recipe.connect(Endpoint("127.0.0.1", ctx.port, f"127.0.0.1:{ctx.port}"), ctx)
            try:
                yield session
            finally:
                await session.aclose()
        finally:
            for proc in procs:
                _kill(proc)
            for proc in procs:
                with contextlib.suppress(ProcessLookupError):
                    await proc.wait()
            os.close(log_fd)
