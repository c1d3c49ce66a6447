"""Boot a browser engine inside a rig, through nothing but the capabilities ``EngineHost`` names.

The same recipe ``hostlaunch`` runs on the host runs here: the plan's files are written into the rig user's
home, its setup steps run to completion, its long-lived processes run as ``RigExec.run`` tasks (cancelling a
task kills that process group, so closing the engine needs nothing from the backend). Engines behind a relay
(A and B) listen on guest loopback 9223 and a ``socat`` relay answers on 9222; engine C's driver listens on
9222 itself. Exactly one host loopback port is forwarded to guest 9222, and the client connects through it
naming the guest-side authority (engine B checks the Host header against the port it listens on).

Each long-lived process runs with its stderr joined to its stdout, streamed into a bounded buffer per process:
``RigEngine.log()`` reads what the engine said while it runs (a page that failed to load, a sandbox it could not
set up), not only when it died.

Only ``write_file``, ``run``, ``listening_ports`` and ``forward`` are used, so a backend other than the enclosure
(the planned microVM backend) boots browsers with this module unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from hangar.core.confine import ExecResult
from hangar.errors import HangarError, InvalidArgs, Unavailable
from hangar.rigs.backends.capabilities import Command, EngineHost
from hangar.rigs.engines.launch import (
    AUTOMATION_PORT,
    ENGINE_PORT,
    LISTEN_POLL_S,
    Endpoint,
    EngineProcess,
    EngineRecipe,
    LaunchContext,
)
from hangar.rigs.engines.session import EngineSession

log = logging.getLogger("hangar.rigs.engines")

GUEST_HOME = "/home/rig"  # the rig user's home in every rig
CA_GUEST_PATH = f"{GUEST_HOME}/.hangar/trust/dev-ca.pem"  # the dev-domain CA (public certificate only)
RELAY_ARGV = (
    "socat",
    f"TCP-LISTEN:{AUTOMATION_PORT},bind=127.0.0.1,fork,reuseaddr",
    f"TCP:127.0.0.1:{ENGINE_PORT}",
)
SETUP_TIMEOUT_S = 60.0
TAIL_CHARS = 800
LOG_BYTES = 64 * 1024  # per process: the newest output ``RigEngine.log`` keeps
# Runs argv with stderr joined to stdout, which is the stream ``RigExec.run`` hands over as it comes.
JOINED_OUTPUT = ("sh", "-c", 'exec "$@" 2>&1', "joined-output")
CLOSE_TIMEOUT_S = 5.0


def check_public_pem(pem: bytes) -> None:
    """A CA handed to a rig must be a certificate and nothing else: a private key never enters a guest."""
    text = pem.decode("ascii", "replace")
    if "PRIVATE KEY" in text or "-----BEGIN CERTIFICATE-----" not in text:
        raise InvalidArgs("trust_pem must hold PEM certificates only (no private key)", field="trust_pem")


@dataclass
class RigEngine:
    """A browser engine running inside a rig: its processes, its one forward and the connected session."""

    handle: EngineHost
    recipe: EngineRecipe
    context: LaunchContext
    host_port: int | None = None
    session: EngineSession | None = None
    _tasks: list[tuple[str, asyncio.Task[ExecResult]]] = field(default_factory=list)
    _output: dict[str, bytearray] = field(default_factory=dict)
    _closed: bool = False

    @property
    def engine(self) -> str:
        return self.recipe.engine

    def endpoint(self) -> Endpoint:
        """Where a client dials the engine from the host, and the authority the engine believes it has."""
        if self.host_port is None:
            raise Unavailable(f"{self.engine} is not running")
        return Endpoint("127.0.0.1", self.host_port, f"127.0.0.1:{self.context.port}")

    async def launch(self) -> Endpoint:
        """Write the plan's files, run its setup, start its processes (and the relay), wait until the engine
        and the relay listen, and forward one host loopback port to guest 9222."""
        plan = self.recipe.plan(self.context)
        for relative, content in plan.files.items():
            await self.handle.write_file(f"{self.context.home}/{relative}", content, exclusive=False)
        for step in plan.setup:
            result = await self.handle.run(self._command(step, SETUP_TIMEOUT_S), None)
            if result.exit_code != 0 or result.timed_out:
                raise Unavailable(f"{self.engine}: {step.name} failed: {_tail(result)}")
        processes = list(plan.processes)
        if self.recipe.relay:
            processes.append(EngineProcess("relay", RELAY_ARGV))
        for process in processes:
            joined = EngineProcess(process.name, (*JOINED_OUTPUT, *process.argv), process.env)
            run = self.handle.run(self._command(joined, None), self._collector(process.name))
            self._tasks.append((process.name, asyncio.create_task(run, name=process.name)))
        wanted = {self.context.port, AUTOMATION_PORT}
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.recipe.boot_timeout_s
        while not wanted <= set(await self.handle.listening_ports()):
            self._check_running()
            if loop.time() > deadline:
                raise Unavailable(f"{self.engine} did not listen on port {self.context.port} in time")
            await asyncio.sleep(LISTEN_POLL_S)
        self.host_port = await self.handle.forward(AUTOMATION_PORT, "127.0.0.1", None)
        return self.endpoint()

    async def connect(self) -> EngineSession:
        """Connect the engine's client through the forward (bounded by the recipe's boot timeout)."""
        try:
            self.session = await asyncio.wait_for(
                self.recipe.connect(self.endpoint(), self.context), self.recipe.boot_timeout_s
            )
        except TimeoutError:
            self._check_running()
            raise Unavailable(f"{self.engine} did not answer its client in time") from None
        return self.session

    def _collector(self, name: str) -> Callable[[bytes], Awaitable[None]]:
        buffer = self._output.setdefault(name, bytearray())

        async def collect(chunk: bytes) -> None:
            buffer.extend(chunk)
            if len(buffer) > LOG_BYTES:
                del buffer[: len(buffer) - LOG_BYTES]

        return collect

    def log(self) -> str:
        """The newest output of each engine process (at most ``LOG_BYTES`` each), headed by its name. It is
        the engine's own words about pages it loaded: untrusted, for diagnosing, never for an agent's reply."""
        parts = []
        for name, buffer in self._output.items():
            text = buffer.decode("utf-8", "replace")
            parts.append(f"--- {name} ---\n{text}" + ("" if not text or text.endswith("\n") else "\n"))
        return "".join(parts)

    def _command(self, process: EngineProcess, timeout_s: float | None) -> Command:
        return Command(process.argv, self.context.home, dict(process.env), None, timeout_s)

    def _check_running(self) -> None:
        """An engine process that ended on its own ends the boot, with what it said."""
        for name, task in self._tasks:
            if task.done():
                if task.cancelled():
                    raise Unavailable(f"{self.engine}: {name} was stopped")
                exc = task.exception()
                if exc is not None:
                    message = exc.message if isinstance(exc, HangarError) else str(exc)
                    raise Unavailable(f"{self.engine}: {name} failed: {message}")
                raise Unavailable(f"{self.engine}: {name} exited with code {task.result().exit_code}: "
                                  f"{_tail(task.result())}")  # fmt: skip

    def alive(self) -> bool:
        return bool(self._tasks) and not any(task.done() for _, task in self._tasks)

    async def aclose(self, *, graceful: bool = True) -> None:
        """Close the client, stop every engine process (cancelling a run kills its process group) and the
        forward. ``graceful`` False skips saying goodbye to an engine that cannot answer (a frozen rig).
        Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        if self.session is not None:
            try:
                await asyncio.wait_for(self.session.aclose(), CLOSE_TIMEOUT_S if graceful else 0.01)
            except Exception:  # the processes are killed below either way
                log.info("%s: the client did not close cleanly", self.engine, exc_info=True)
        for _, task in self._tasks:
            task.cancel()
        await asyncio.gather(*(task for _, task in self._tasks), return_exceptions=True)
        if self.host_port is not None:
            with contextlib.suppress(HangarError):
                await self.handle.unforward(self.host_port)


def launch_context(recipe: EngineRecipe, display: tuple[int, int], home_url: str, ca_file: str | None) -> LaunchContext:
    port = ENGINE_PORT if recipe.relay else AUTOMATION_PORT
    return LaunchContext(GUEST_HOME, port, display[0], display[1], home_url, ca_file)


async def boot_engine(
    handle: EngineHost,
    recipe: EngineRecipe,
    *,
    display: tuple[int, int],
    home_url: str,
    trust_pem: bytes | None = None,
) -> RigEngine:
    """Start ``recipe``'s engine in the rig and connect to it; everything started is stopped on failure."""
    ca_file = None
    if trust_pem is not None:
        check_public_pem(trust_pem)
        await handle.write_file(CA_GUEST_PATH, trust_pem, exclusive=False)
        ca_file = CA_GUEST_PATH
    engine = RigEngine(handle, recipe, launch_context(recipe, display, home_url, ca_file))
    try:
        await engine.launch()
        await engine.connect()
    except BaseException:
        await engine.aclose()
        raise
    return engine


def _tail(result: ExecResult) -> str:
    text = (result.stderr or result.stdout).strip()
    return text[-TAIL_CHARS:] or "(no output)"
