"""Where code that users author runs: pipeline shell steps, command-line agents and repositories' setup scripts.

Such code runs confined, never as the server on the host: a part that can build enclosures (the rigs part)
provides a ``Confinement`` service, and ``confinement_for`` hands it out. One enclosure serves one *scope*, with
the scope's working directory mounted as the program's working directory and an environment holding only what
the program needs. Code of different trust never shares a scope, so never a process tree, a PID namespace or an
enclosure's own files: a pipeline run's shell steps share theirs, kept warm between steps and freed when the run
finishes; an agent run and a setup script each get one of their own (``run_alone``), freed when they end. Within
a scope each job is contained: whatever it leaves running (a background job, a double fork, a new session) is
killed when it exits.

A job may have to wait before its program starts: for the enclosure's image to be built (a first start: minutes)
or for its enclosure to boot. The confinement tells the caller what it waits for, step by step (``on_wait``:
"terminal image: downloading packages (4/10)", "starting the enclosure"), so the run can say so where people look
(an agent run's turn, a shell step's progress) instead of looking busy; the last report of a wait has ``over``
set, when the program is about to start. A job that starts at once (its enclosure is up, or comes up within a
moment) hears nothing.

Where the host cannot build enclosures, user code is refused with a sentence naming what is missing. A server
owner who runs a single-person install may switch on trusted host execution (``hangar admin trusted-host-exec
on``, off by default, said loudly at every server start): then ``HostExecution`` runs user code on the host
as the server's user, still with a minimal environment. The setting is read on every use, so a change made
by the CLI holds at once in every process.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import signal
import stat
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from hangar.core.fileio import write_private_atomic
from hangar.core.procs import die_with_parent, record_group
from hangar.core.settings import SettingSpec, strict_bool
from hangar.errors import Refused, Unavailable

if TYPE_CHECKING:
    from hangar.core.context import AppContext

log = logging.getLogger("hangar.confine")

SETTING_TRUSTED_HOST_EXEC = "trustedHostExec"
TRUSTED_HOST_EXEC_SPEC = SettingSpec(
    SETTING_TRUSTED_HOST_EXEC,
    "Run shell steps and command agents on the host instead of enclosures (single-person installs).",
    validate=strict_bool(SETTING_TRUSTED_HOST_EXEC),
)
TRUSTED_HOST_EXEC_FIX = "hangar admin trusted-host-exec on"
KILL_GRACE_S = 2.0
MAX_OUTPUT = 16 * 1024 * 1024  # per stream; what a program prints beyond this is not kept
MAX_RESULT_FILE = 16 * 1024 * 1024  # of a file a job leaves for the server (``Job.results``)
DRAIN_AFTER_EXIT_S = 0.2  # once a program exited, its output is read until it pauses this long
# What a program run on the host keeps of the server's environment: enough to find programs and a home.
HOST_ENV_KEPT = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "TZ")

OnOutput = Callable[[bytes], Awaitable[None]]


@dataclass(frozen=True)
class Wait:
    """What a job waits for before its program starts: ``text`` for people ("terminal image: downloading packages
    (4/10)"), ``step`` of ``steps`` when the wait counts them (0 of 0 when it does not), and ``over`` on the last
    report of the wait (the program starts now)."""

    text: str
    step: int = 0
    steps: int = 0
    over: bool = False


OnWait = Callable[[Wait], Awaitable[None]]


@dataclass(frozen=True)
class ExecResult:
    exit_code: int  # the program's exit status; 128+signal when it was killed
    stdout: str  # decoded as UTF-8 with replacement
    stderr: str
    timed_out: bool  # True when the timeout fired and the program was killed
    # The job's ``results`` the program left (``Job.results``): a regular file each, up to MAX_RESULT_FILE bytes.
    files: Mapping[str, bytes] = field(default_factory=dict)


@dataclass(frozen=True)
class Scope:
    """One enclosure: ``key`` names it, ``<kind>:<id>``, made by the part that runs the code
    (``hangar.pipelines.layout.pipeline_run_key``, ``hangar.agents.adapters.command.agent_run_key``,
    ``hangar.workspace.setup_script.setup_key``); jobs given the same key share it, so only jobs of the same trust
    may."""

    key: str
    workspace_id: str
    workdir: Path  # host directory, mounted as the program's working directory
    control_dir: Path | None = None  # host execution records process groups here (never inside workdir)
    # The space whose code runs here (an agent run's, a setup script's): its repos' forges are on the
    # enclosure's egress allowlist. From the server's records, never from anything in workdir.
    space_id: str | None = None
    # The program may read ``workdir`` and never change it (a reviewer's checkout): only a confinement that mounts
    # it read-only (``mounts_read_only``) runs such a scope; the others refuse it rather than trust the program.
    read_only: bool = False


@dataclass(frozen=True)
class CallBack:
    """The server's MCP endpoint for a confined program: ``url`` as the host reaches it, handed to the program
    in ``variable``. Where the program runs decides the address it gets: host execution hands ``url`` as it
    is; an enclosure, whose loopback is its own and whose gate keeps the server's listener out, opens its
    server door for the job and hands the door's address (``hangar.rigs.egress.server_door``)."""

    variable: str
    url: str


@dataclass(frozen=True)
class Job:
    argv: tuple[str, ...]  # argv[0] is looked up on the PATH of wherever it runs
    env: Mapping[str, str] = field(default_factory=dict)  # added to a minimal base, never the server's env
    stdin: bytes | None = None
    timeout_s: float | None = None
    group_name: str = "job"  # the record name of its process group under the scope's control_dir
    # Files placed before the program starts (plain names), readable by it, in ``Confinement.files_seen``: in an
    # enclosure a directory of the enclosure's own, which no other scope sees (never the shared working folder).
    files: Mapping[str, bytes] = field(default_factory=dict)
    # Plain names of files the program may write beside them, read back when it exits (``ExecResult.files``).
    results: tuple[str, ...] = ()
    call_back: CallBack | None = None  # the program may call the server's MCP endpoint back while it runs


class Confinement:
    """What runs programs; subclassed by each way of doing it (looked up as a service, so not an ``ABC``).
    This base runs nothing: it is unavailable, and ``confinement_for`` never hands it out."""

    where: ClassVar[str] = "nowhere"
    # Whether a ``read_only`` scope's working directory is mounted so that no write reaches it (EROFS).
    mounts_read_only: ClassVar[bool] = False

    def unavailable_reason(self) -> str | None:
        """None when programs can run here; else one sentence saying what the host lacks."""
        return "no way of confining programs is configured"

    def workdir_seen(self, scope: Scope) -> str:
        """The scope's working directory as the program sees it."""
        return str(scope.workdir)

    def files_seen(self, scope: Scope) -> str:
        """Where a job's ``files`` and ``results`` are, as the program sees them."""
        return self.workdir_seen(scope)

    async def reaches(self, scope: Scope, host: str) -> bool:
        """Whether a program in ``scope`` can reach ``host`` (its egress allowlist admits it): what a credential
        for that host may be handed to. Host execution has no allowlist, so it reaches every host."""
        return True

    async def run(
        self, scope: Scope, job: Job, on_stdout: OnOutput | None = None, on_wait: OnWait | None = None
    ) -> ExecResult:
        """Run ``job`` in ``scope``'s working directory. What it leaves running is killed when it exits;
        cancelling the call kills the program and all it started. ``on_wait`` hears what the job waits for before
        the program starts (an image build, a boot), in order; a failing listener never fails the job."""
        raise Unavailable(f"{job.argv[0]} cannot run: {self.unavailable_reason()}")

    async def release(self, key: str) -> None:
        """The scope is done (its run finished): free what it holds. Unknown keys are ignored."""

    async def aclose(self) -> None:
        """Free every scope (server stop)."""


async def run_alone(
    confinement: Confinement,
    scope: Scope,
    job: Job,
    on_stdout: OnOutput | None = None,
    on_wait: OnWait | None = None,
) -> ExecResult:
    """Run ``job`` in a scope no other job uses, and free the scope when it ends, however it ends."""
    try:
        return await confinement.run(scope, job, on_stdout, on_wait)
    finally:
        await confinement.release(scope.key)


def read_regular(path: Path, limit: int = MAX_RESULT_FILE) -> bytes | None:
    """A file a program wrote, where it could also have planted a symlink or a fifo: only a regular file is read,
    never followed, and never past ``limit``; None otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, limit)
    finally:
        os.close(fd)


def plain_name(name: str) -> str:
    """A file name placed in a working directory: one component, never a path."""
    if not name or "/" in name or name in (".", "..") or "\0" in name:
        raise ValueError(f"{name!r} is not a plain file name")
    return name


class HostExecSwitch:
    """The server owner's trusted-host-exec choice, read afresh on every use (another process may flip it). The
    part that keeps server settings (identity) provides it; without it, host execution stays off."""

    def __init__(self, read_setting: Callable[[str], Awaitable[Any]]) -> None:
        self._read = read_setting

    async def on(self) -> bool:
        return (await self._read(SETTING_TRUSTED_HOST_EXEC)) is True


async def trusted_host_exec(app: AppContext) -> bool:
    switch = app.maybe_service(HostExecSwitch)
    return switch is not None and await switch.on()


async def confinement_reason(app: AppContext) -> str | None:
    """Why user code cannot run confined here (None when it can)."""
    provided = app.maybe_service(Confinement)
    return "this server runs without the rigs part" if provided is None else provided.unavailable_reason()


async def confinement_for(app: AppContext | None) -> Confinement:
    """The confinement user code runs in, read afresh each time (the owner may switch host execution in
    another process); ``Unavailable`` naming what is missing when neither is possible."""
    if app is None:
        reason: str | None = "no server is running"
    else:
        if await trusted_host_exec(app):
            return HOST
        reason = await confinement_reason(app)
        if reason is None:
            return app.service(Confinement)
    raise Unavailable(
        f"user code runs confined in an enclosure, and {reason}; on a single-person install the server owner "
        f"may run it on the host instead: {TRUSTED_HOST_EXEC_FIX}"
    )


class HostExecution(Confinement):
    """Trusted host execution: the program runs as the server's user, in the scope's directory, in its own
    process group, with only ``HOST_ENV_KEPT`` of the server's environment, and dies with the process that
    started it (``die_with_parent``: a killed server or worker leaves no script running to its end)."""

    where = "host"

    def unavailable_reason(self) -> str | None:
        return None

    def workdir_seen(self, scope: Scope) -> str:
        return str(scope.workdir)

    async def run(
        self, scope: Scope, job: Job, on_stdout: OnOutput | None = None, on_wait: OnWait | None = None
    ) -> ExecResult:
        if scope.read_only:
            # The program runs as the server's user on the host folder itself: nothing could stop its writes.
            raise Refused(
                f"{job.argv[0]} cannot run read-only on the host: trusted host execution cannot mount the working "
                f"folder read-only, and a program asked not to write is not prevented from writing"
            )
        # Nothing to wait for on the host: the program starts at once.
        env = {k: os.environ[k] for k in HOST_ENV_KEPT if k in os.environ}
        env.update(job.env)
        if job.call_back is not None:
            env[job.call_back.variable] = job.call_back.url
        scope.workdir.mkdir(parents=True, exist_ok=True)
        for name, data in job.files.items():
            write_private_atomic(scope.workdir / plain_name(name), data)
        try:
            proc = await asyncio.create_subprocess_exec(
                *job.argv,
                cwd=scope.workdir,
                env=env,
                stdin=asyncio.subprocess.DEVNULL if job.stdin is None else asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
                preexec_fn=die_with_parent(),
            )
        except OSError as exc:
            return ExecResult(127, "", f"{job.argv[0]}: {exc.strerror or exc}", False)
        recorded = None
        if scope.control_dir is not None:
            scope.control_dir.mkdir(parents=True, exist_ok=True)
            recorded = record_group(scope.control_dir, job.group_name, proc.pid)
        try:
            done = await _collect(proc, job, on_stdout)
            left = {name: read_regular(scope.workdir / plain_name(name)) for name in job.results}
            return dataclasses.replace(done, files={name: data for name, data in left.items() if data is not None})
        finally:
            # What the program left running in its group ends with it (trusted host execution has no
            # namespace to empty; a program that started a new session is beyond reach here).
            await kill_group(proc)
            if recorded is not None:
                recorded.unlink(missing_ok=True)
            for name in (*job.files, *job.results):
                with contextlib.suppress(OSError):
                    (scope.workdir / plain_name(name)).unlink(missing_ok=True)


async def _collect(proc: asyncio.subprocess.Process, job: Job, on_stdout: OnOutput | None) -> ExecResult:
    """Feed the program ``job.stdin``, relay and keep its output (up to ``MAX_OUTPUT`` per stream) until it
    exits, then end what it left in its process group; past ``job.timeout_s`` end the group and report the
    result as timed out. Output still coming after the exit is read until it pauses for ``DRAIN_AFTER_EXIT_S``
    (a program that started a new session may hold the pipes open)."""
    assert proc.stdout is not None and proc.stderr is not None
    if proc.stdin is not None and job.stdin is not None:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            proc.stdin.write(job.stdin)
            await proc.stdin.drain()
        proc.stdin.close()
    out, err = bytearray(), bytearray()
    moved, relaying = [0], [0]  # chunks read so far; relays under way (a slow relay is no pause)

    async def keep(stream: asyncio.StreamReader, kept: bytearray, on_chunk: OnOutput | None) -> None:
        while chunk := await stream.read(65536):
            moved[0] += 1
            if len(kept) < MAX_OUTPUT:
                kept += chunk[: MAX_OUTPUT - len(kept)]
            if on_chunk is not None:
                relaying[0] += 1
                try:
                    await on_chunk(chunk)
                finally:
                    relaying[0] -= 1

    readers = {
        asyncio.create_task(keep(proc.stdout, out, on_stdout)),
        asyncio.create_task(keep(proc.stderr, err, None)),
    }
    timed_out = False
    code: int | None = None
    try:
        try:
            code = await asyncio.wait_for(_exited(proc), job.timeout_s)
        except TimeoutError:
            timed_out = True
        await kill_group(proc)
        pending = readers
        while pending:
            before = moved[0]
            _, pending = await asyncio.wait(pending, timeout=DRAIN_AFTER_EXIT_S)
            if moved[0] == before and not relaying[0]:
                break
    finally:
        for reader in readers:
            reader.cancel()
    for reader in readers:
        if reader.done() and not reader.cancelled() and (failed := reader.exception()) is not None:
            raise failed
    if code is None:  # timed out, and killed since
        code = await _exited(proc)
    return ExecResult(
        128 - code if code < 0 else code, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), timed_out
    )


async def _exited(proc: asyncio.subprocess.Process) -> int:
    """Return the program's status (its exit code, or minus the signal that killed it) once it has exited.
    ``Process.wait`` also waits until nothing holds its pipes, which a process it left running may do for ever."""
    if proc.returncode is not None:
        return proc.returncode
    loop = asyncio.get_running_loop()
    gone = loop.create_future()
    try:
        pidfd = os.pidfd_open(proc.pid)  # readable once the process has exited
    except (AttributeError, OSError):  # not Linux, or already reaped
        pidfd = None
    if pidfd is not None:

        def readable() -> None:
            if not gone.done():
                gone.set_result(None)

        loop.add_reader(pidfd, readable)
        try:
            await gone
            # Its status without reaping it (the child watcher does that): no wait for the watcher's report.
            with contextlib.suppress(ChildProcessError, OSError):
                info = os.waitid(os.P_PIDFD, pidfd, os.WEXITED | os.WNOWAIT | os.WNOHANG)  # noqa: ASYNC222 - WNOHANG
                if info is not None:
                    return info.si_status if info.si_code == os.CLD_EXITED else -info.si_status
        finally:
            loop.remove_reader(pidfd)
            os.close(pidfd)
    pause = 0.001
    while proc.returncode is None:  # the child watcher reports the status a moment after the exit
        await asyncio.sleep(pause)
        pause = min(pause * 2, 0.05)
    return proc.returncode


async def kill_group(proc: asyncio.subprocess.Process) -> None:
    """End the program and everything it started: SIGTERM to its group, SIGKILL after a grace period."""
    # The group is signalled even when the leader has exited: what it started may still run.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGTERM)
    if proc.returncode is None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(_exited(proc), KILL_GRACE_S)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    await _exited(proc)


HOST = HostExecution()
