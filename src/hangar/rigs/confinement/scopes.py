"""Confinement for user code on the rig backend: one rig per scope (a pipeline run's steps, an agent run, a script).

A scope's rig boots on its first job with the scope's working directory mounted at ``GUEST_WORKTREE``, the
terminal's egress allowlist (``allowlist_of``: from the server's records, never from the mounted directory,
which the programs write) and the terminal's limits, and stays up for later jobs of the same scope: a shell
step in a warm rig costs one exec round trip, not a boot. It is closed when the scope is released (its
pipeline run finished), after ``IDLE_S`` without a job, or when the server stops. Programs run as the rig
user with the rig's base environment plus what the job names; they see neither the data directory nor the
host. Each job is contained (``Command.contained``): what it leaves running is killed when it exits.

Every enclosure counts in the memory budget of rigs (``budget.MemoryBudget``) at its ceiling while it is up: one
that does not fit is refused, naming the budget and what holds it, and an idle warm one is closed to make room.
The scope's working directory gets its disk (``hangar.core.disks``) before the enclosure starts.

A job that may call the server back (``Job.call_back``: a command agent with an MCP grant) holds the rig's
server door open while it runs and gets the door's address; the door closes when the last such job ends.

A job whose enclosure is not up yet waits for it: for the terminal image pack to be built (the first start) and for
the boot. Every job waiting for the scope's enclosure hears each step of that (the pack build's own steps, then the
boot's) through its ``on_wait``, with one log line per step and job (``waits.WaitRelay``; a wait over within a
moment, a warm boot, is not told); a job finding its enclosure up hears nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import re
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from hangar.core.confine import MAX_RESULT_FILE, Confinement, ExecResult, Job, OnOutput, OnWait, Scope, plain_name
from hangar.core.disks import DEFAULT_RIG_DISK_MB, ScopeDisks
from hangar.errors import NotFound, Refused, Unavailable
from hangar.rigs.backends.base import GUEST_WORKTREE, Command, GuestTree, RigBackend, RigHandle, RigSpec
from hangar.rigs.backends.capabilities import RigFiles
from hangar.rigs.confinement.waits import ENCLOSURE_UP, STARTING, WaitRelay
from hangar.rigs.egress.allowlist import matches, terminal_default_allowlist
from hangar.rigs.lifecycle.budget import HeldEnclosure, MemoryBudget
from hangar.rigs.model import LIMITS, Surface

log = logging.getLogger("hangar.rigs.confinement.scopes")

IDLE_S = 300.0
JOB_FILES = "/home/rig/.hangar"  # a job's files and results: in the rig's own layer, which no other scope sees
REAP_EVERY_S = 15.0
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


@dataclass
class _Warm:
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    rig: RigHandle | None = None
    busy: int = 0
    last_used: float = 0.0
    waiting: set[WaitRelay] = field(default_factory=set)  # the jobs waiting for this enclosure to be up

    def tell(self, text: str) -> None:
        for relay in list(self.waiting):
            relay(text)


AllowlistOf = Callable[[Scope], Awaitable[frozenset[str]]]


async def _baseline(scope: Scope) -> frozenset[str]:
    return await asyncio.to_thread(terminal_default_allowlist)


class RigConfinement(Confinement):
    where = "enclosure"
    mounts_read_only = True  # a read-only scope's directory is the rig's worktree mounted read-only

    def __init__(
        self,
        backend: RigBackend,
        *,
        idle_s: float = IDLE_S,
        allowlist_of: AllowlistOf = _baseline,
        budget: MemoryBudget | None = None,
        disks: ScopeDisks | None = None,
    ) -> None:
        self._backend = backend
        self._idle_s = idle_s
        self._allowlist_of = allowlist_of
        self._budget = budget
        self._disks = disks
        self._warm: dict[str, _Warm] = {}
        self._reaper: asyncio.Task[None] | None = None

    def unavailable_reason(self) -> str | None:
        return self._backend.unavailable_reason()

    def workdir_seen(self, scope: Scope) -> str:
        return GUEST_WORKTREE

    def files_seen(self, scope: Scope) -> str:
        return JOB_FILES

    async def reaches(self, scope: Scope, host: str) -> bool:
        return matches(host, await self._allowlist_of(scope))

    async def run(
        self, scope: Scope, job: Job, on_stdout: OnOutput | None = None, on_wait: OnWait | None = None
    ) -> ExecResult:
        warm = self._warm.setdefault(scope.key, _Warm())
        warm.busy += 1
        try:
            rig = await self._rig_for(scope, warm, on_wait)
            for name, data in job.files.items():
                await rig.write_file(f"{JOB_FILES}/{plain_name(name)}", data, exclusive=False)
            env = dict(job.env)
            if job.call_back is None:
                done = await rig.run(Command(job.argv, GUEST_WORKTREE, env, job.stdin, job.timeout_s, True), on_stdout)
            else:
                env[job.call_back.variable] = await rig.open_server_door(job.call_back.url)
                try:
                    command = Command(job.argv, GUEST_WORKTREE, env, job.stdin, job.timeout_s, True)
                    done = await rig.run(command, on_stdout)
                finally:
                    await rig.close_server_door()
            return dataclasses.replace(done, files=await _results(rig, job.results))
        finally:
            warm.busy -= 1
            warm.last_used = asyncio.get_running_loop().time()

    async def _rig_for(self, scope: Scope, warm: _Warm, on_wait: OnWait | None) -> RigHandle:
        """The scope's enclosure, up; while the job waits for it, ``on_wait`` hears each step."""
        if warm.rig is not None and warm.rig.alive() and not warm.lock.locked():
            return warm.rig  # up: nothing to wait for, nothing said
        relay = WaitRelay(scope.key, on_wait)
        warm.waiting.add(relay)
        try:
            if warm.lock.locked():  # another job of the scope is starting it: its steps come from the next on
                relay(STARTING)
            rig = await self._rig(scope, warm)
        except asyncio.CancelledError:
            relay.cancel()
            raise
        except Exception:
            await relay.finish(None)  # what was said arrives before the caller hears why it failed
            raise
        finally:
            warm.waiting.discard(relay)
        await relay.finish(ENCLOSURE_UP)
        return rig

    async def _rig(self, scope: Scope, warm: _Warm) -> RigHandle:
        async with warm.lock:
            if warm.rig is not None and warm.rig.alive():
                return warm.rig
            warm.tell(STARTING)
            if warm.rig is not None:
                await warm.rig.aclose()
            if self._disks is not None:
                await self._disks.ensure(scope.workdir)  # what the enclosure writes there has a quota
            scope.workdir.mkdir(parents=True, exist_ok=True)
            limits = LIMITS[Surface.terminal]
            allow = await self._allowlist_of(scope)
            rig_id = f"u-{_UNSAFE.sub('-', scope.key)[-40:]}-{secrets.token_hex(3)}"
            # The working directory is the scope's own server-made folder (its guests write inside it, never the
            # folder itself): mounted as opened, beneath nothing but itself.
            spec = RigSpec(
                rig_id, scope.workspace_id, "terminal", limits.memory_mb, limits.vcpus, allow, None,
                GuestTree(scope.workdir, read_only=scope.read_only),
                disk_mb=await self._disks.rig_disk_mb() if self._disks is not None else DEFAULT_RIG_DISK_MB,
            )  # fmt: skip
            held = await self._admit(scope, warm, limits.memory_mb)
            try:
                warm.rig = await self._backend.start(spec, warm.tell)
            except BaseException:
                self._forget(scope.key)
                raise
            if held is not None:
                held.handle = warm.rig
            log.info("enclosure for %s is up", scope.key)
            self._ensure_reaper()
            return warm.rig

    async def _admit(self, scope: Scope, warm: _Warm, memory_mb: int) -> HeldEnclosure | None:
        """Count the scope's enclosure in the memory budget before it starts (``Refused`` past it)."""
        if self._budget is None:
            return None
        self._budget.forget(scope.key)  # a dead enclosure being replaced holds nothing any more
        held = HeldEnclosure(
            scope.key,
            scope.workspace_id,
            memory_mb,
            busy=lambda: warm.busy > 0 or warm.lock.locked(),
            last_used=lambda: warm.last_used,
            release_if_idle=self.release_if_idle,
        )
        await self._budget.admit(held)
        return held

    def _forget(self, key: str) -> None:
        if self._budget is not None:
            self._budget.forget(key)

    async def release_if_idle(self, key: str) -> bool:
        """Close the scope's enclosure unless a job runs in it (the budget makes room); True when closed."""
        warm = self._warm.get(key)
        if warm is None or warm.busy or warm.lock.locked():
            return False
        await self.release(key)  # pops it before the first await: no job can pick it up meanwhile
        return True

    def _ensure_reaper(self) -> None:
        if self._reaper is None or self._reaper.done():
            self._reaper = asyncio.create_task(self._reap(), name="confinement-reaper")

    async def _reap(self) -> None:
        while self._warm:
            await asyncio.sleep(REAP_EVERY_S)
            now = asyncio.get_running_loop().time()
            for key, warm in list(self._warm.items()):
                if warm.busy == 0 and not warm.lock.locked() and now - warm.last_used >= self._idle_s:
                    await self.release(key)

    async def release(self, key: str) -> None:
        warm = self._warm.pop(key, None)
        if warm is None or warm.rig is None:
            return
        try:
            async with warm.lock:
                rig, warm.rig = warm.rig, None
                if rig is not None:
                    await rig.aclose()
        finally:
            self._forget(key)

    async def aclose(self) -> None:
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reaper
        for key in list(self._warm):
            await self.release(key)


async def _results(rig: RigFiles, names: tuple[str, ...]) -> dict[str, bytes]:
    """The job's results as the rig user reads them in the rig (a regular file, no symlink followed), each up to
    ``MAX_RESULT_FILE`` bytes; a name the program did not leave is absent."""
    found: dict[str, bytes] = {}
    for name in names:
        data = bytearray()
        try:
            async for chunk in rig.read_file(f"{JOB_FILES}/{plain_name(name)}"):
                data += chunk[: MAX_RESULT_FILE - len(data)]
                if len(data) >= MAX_RESULT_FILE:
                    break
        except (NotFound, Refused, Unavailable):
            continue
        found[name] = bytes(data)
    return found
