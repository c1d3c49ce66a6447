"""The ``mobile-emulator`` backend and its rigs.

A rig is a phone adb drives (``host.choose`` says which: a configured running device, or an emulator booted for
the rig). One rig holds a configured device at a time in this process: a second open is refused while the first
lives, since two rigs driving one screen would each see the other's taps. A phone runs no host shell, has no
files or ports of the host's kind and no egress gate (the spec: the emulator manages its own networking), so
those capabilities refuse; what it does is ``PhoneRig.adb`` (the verbs, ``hangar.rigs.lanes.mobileuse``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any, ClassVar, NoReturn

from hangar.core.confine import ExecResult
from hangar.errors import Conflict, Refused, Unavailable
from hangar.rigs.backends.base import Command, Pty, RigBackend, RigHandle, RigSpec
from hangar.rigs.backends.mobile import host
from hangar.rigs.backends.mobile.adb import Adb, adb_path
from hangar.rigs.backends.mobile.emulator import Emulator

log = logging.getLogger(__name__)

NAME = "mobile-emulator"
HEALTH_POLL_S = 5.0  # how often a rig looks whether its phone is still there
HEALTH_MISSES = 3  # checks in a row the phone may be missing before the rig is failed
NO_HOST = "a phone rig has no host shell, host files or forwarded ports: drive it with mobile_use (its shell verb)"
SettingReader = Callable[[str], Awaitable[Any]]


class PhoneRig(RigHandle):
    def __init__(
        self,
        spec: RigSpec,
        adb: Adb,
        dirs: tuple[Path, Path],
        *,
        emulator: Emulator | None,
        connected: bool,
        release: Callable[[], None],
    ) -> None:
        self.spec = spec
        self.apks_dir, self.staging_dir = dirs  # where install_apk may read packages, where it copies them
        self.adb = adb
        self.emulator = emulator
        self._connected = connected  # this rig ran `adb connect`, so it disconnects at the end
        self._release = release
        self._closed = asyncio.Event()
        self._dead_detail = "the phone went away"

    @property
    def serial(self) -> str:
        return self.adb.serial

    def _refuse(self) -> NoReturn:
        raise Refused(NO_HOST)

    async def exec(self, command: str, *, timeout_s: float | None, stdin: bytes | None = None) -> ExecResult:
        self._refuse()

    async def run(self, command: Command, on_stdout: Callable[[bytes], Awaitable[None]] | None) -> ExecResult:
        self._refuse()

    async def open_pty(self, cols: int, rows: int) -> Pty:
        self._refuse()

    async def park(self) -> None:
        return None  # a phone keeps running; an idle one costs the host nothing more parked

    async def wake(self) -> None:
        return None

    async def resident_mb(self) -> int:
        return self.emulator.resident_mb() if self.emulator is not None else 0

    async def listening_ports(self) -> list[int]:
        return []

    async def forward(self, guest_port: int, host: str, host_port: int | None) -> int:
        self._refuse()

    async def unforward(self, host_port: int) -> None:
        return None

    async def grant_hosts(self, hosts: Iterable[str]) -> None:
        raise Refused("egress is not enforced on phone rigs: the emulator or device manages its own networking")

    async def write_file(self, guest_path: str, data: AsyncIterator[bytes] | bytes, *, exclusive: bool) -> None:
        self._refuse()

    async def read_file(self, guest_path: str) -> AsyncIterator[bytes]:
        self._refuse()
        yield b""  # an async generator, as the interface has it

    def alive(self) -> bool:
        if self._closed.is_set():
            return False
        return self.emulator.alive() if self.emulator is not None else True

    async def wait_dead(self) -> None:
        misses = 0
        while not self._closed.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._closed.wait(), HEALTH_POLL_S)
                return
            if self.emulator is not None and not self.emulator.alive():
                self._dead_detail = "the emulator exited"
                return
            try:
                state = await self.adb.state()
            except Unavailable:
                state = "not answering"
            misses = 0 if state == "device" else misses + 1
            if misses >= HEALTH_MISSES:
                self._dead_detail = f"the phone {self.serial} is {state} for adb"
                return

    def death_detail(self) -> str:
        return self._dead_detail

    async def aclose(self) -> None:
        if self._closed.is_set():
            return
        self._closed.set()
        try:
            if self.emulator is not None:
                await self.emulator.stop()
            elif self._connected:
                await self.adb.disconnect()
        finally:
            self._release()


class MobileBackend(RigBackend):
    name: ClassVar[str] = NAME

    def __init__(self, rigs_dir: Path, get_setting: SettingReader) -> None:
        self.rigs_dir = rigs_dir
        self.apks_dir = rigs_dir / "apks"  # where an operator puts packages install_apk may name
        self.staging_dir = rigs_dir / "mobile" / "staging"
        self._get_setting = get_setting
        self._held: dict[str, str] = {}  # device serial -> the rig driving it

    @property
    def _dirs(self) -> tuple[Path, Path]:
        return self.apks_dir, self.staging_dir

    def unavailable_reason(self) -> str | None:
        if adb_path() is None:
            return "adb is not installed on this host: install Debian's package adb (make apt-run-deps does)"
        return None

    async def availability(self) -> str | None:
        """None when a phone rig can open now; else what is missing and how to provide it."""
        chosen = await host.choose(self._get_setting)
        return chosen if isinstance(chosen, str) else None

    async def start(self, spec: RigSpec, progress: Callable[[str], None]) -> RigHandle:
        chosen = await host.choose(self._get_setting)
        if isinstance(chosen, str):
            raise Unavailable(f"mobile rigs cannot run on this host: {chosen}")
        if chosen.device is not None:
            return await self._attach(spec, chosen.device, progress)
        assert chosen.emulator is not None and chosen.avd is not None  # choose returns one or the other
        emulator = Emulator(chosen.emulator, chosen.avd, spec.memory_mb, spec.vcpus)
        adb = await emulator.boot(progress)
        return PhoneRig(spec, adb, self._dirs, emulator=emulator, connected=False, release=lambda: None)

    async def _attach(self, spec: RigSpec, serial: str, progress: Callable[[str], None]) -> PhoneRig:
        holder = self._held.get(serial)
        if holder is not None:
            raise Conflict(f"the phone {serial} is driven by rig {holder}; close that rig first")
        self._held[serial] = spec.rig_id
        try:
            adb = Adb(serial)
            connected = False
            if ":" in serial and not serial.startswith("emulator-"):
                progress(f"connecting adb to {serial}")
                said = await adb.connect()
                connected = said.code == 0 and "connected to" in said.text()
                if not connected:
                    raise Unavailable(f"adb could not connect to {serial}: {said.said()}")
            state = await adb.state()
            if state != "device":
                hint = " (accept the debugging prompt on the device)" if state == "unauthorized" else ""
                raise Unavailable(f"the phone {serial} is {state} for adb{hint}")
            progress(f"driving the phone {serial}")
        except BaseException:
            self._held.pop(serial, None)
            raise

        def release() -> None:
            self._held.pop(serial, None)

        return PhoneRig(spec, adb, self._dirs, emulator=None, connected=connected, release=release)
