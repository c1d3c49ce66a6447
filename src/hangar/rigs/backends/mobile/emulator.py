"""An emulator the vendor SDK boots for one phone rig: a read-only instance of the configured AVD (several rigs
may boot the same AVD; nothing they do is saved to it), headless, on its own console port, in its own session so
closing the rig ends all of it. It is ready when adb sees it and Android says its boot completed.

Not covered by the tests (no SDK on the machines they run on): the README says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
from collections.abc import Callable
from pathlib import Path

from hangar.errors import Unavailable
from hangar.rigs.backends.mobile.adb import Adb, adb_env, run_adb

BOOT_TIMEOUT_S = 600.0  # a cold boot without a snapshot, on a loaded host
FIRST_PORT, LAST_PORT = 5554, 5682  # the console ports adb scans for local emulators (even; adb's is +1)
STOP_GRACE_S = 20.0


def _free(port: int) -> bool:
    for p in (port, port + 1):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", p))
            except OSError:
                return False
    return True


def console_port() -> int:
    for port in range(FIRST_PORT, LAST_PORT + 1, 2):
        if _free(port):
            return port
    raise Unavailable(f"every emulator console port from {FIRST_PORT} to {LAST_PORT} is taken")


class Emulator:
    def __init__(self, emulator: Path, avd: str, memory_mb: int, cores: int) -> None:
        self.emulator, self.avd, self.memory_mb, self.cores = emulator, avd, memory_mb, cores
        self.proc: asyncio.subprocess.Process | None = None
        self.port = 0

    @property
    def serial(self) -> str:
        return f"emulator-{self.port}"

    async def boot(self, progress: Callable[[str], None]) -> Adb:
        self.port = console_port()
        progress(f"booting the emulator ({self.avd}) on port {self.port}")
        self.proc = await asyncio.create_subprocess_exec(
            str(self.emulator),
            *("-avd", self.avd, "-port", str(self.port), "-read-only", "-no-snapshot-save"),
            *("-no-window", "-no-audio", "-no-boot-anim"),
            *("-memory", str(self.memory_mb), "-cores", str(self.cores)),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
            env=adb_env(),
            start_new_session=True,
        )
        adb = Adb(self.serial)
        try:
            async with asyncio.timeout(BOOT_TIMEOUT_S):
                while (await adb.shell([["getprop", "sys.boot_completed"]])).text().strip() != "1":
                    if self.proc.returncode is not None:
                        raise Unavailable(f"the emulator exited with code {self.proc.returncode} while booting")
                    await asyncio.sleep(2)
        except TimeoutError:
            await self.stop()
            raise Unavailable(f"the emulator did not finish booting within {BOOT_TIMEOUT_S:g} s") from None
        except BaseException:
            await self.stop()
            raise
        progress("the emulator booted")
        return adb

    def resident_mb(self) -> int:
        if self.proc is None:
            return 0
        with contextlib.suppress(OSError, ValueError):
            for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return -(-int(line.split()[1]) // 1024)
        return 0

    def alive(self) -> bool:
        return self.proc is not None and self.proc.returncode is None

    async def stop(self) -> None:
        proc = self.proc
        if proc is None or proc.returncode is not None:
            return
        with contextlib.suppress(Unavailable):
            await run_adb(["-s", self.serial, "emu", "kill"], timeout_s=15, what="adb emu kill")
        try:
            await asyncio.wait_for(proc.wait(), STOP_GRACE_S)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()
