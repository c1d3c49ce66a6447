"""Running Debian's ``adb`` for one device: always an argv list (``asyncio.create_subprocess_exec``), never a host
shell, in an environment of adb's own variables only (the server's secrets stay out of adb and of the adb server
it may start), every call bounded in time.

``shell`` uses adb's shell protocol (``adb shell`` on a device offering ``shell_v2``), so a command's exit code,
stdout and stderr come back apart; the command line is written by ``words`` for the device's shell. ``exec_out``
returns raw bytes (a screenshot). The adb server is adb's own: the one on port 5037, or on
``ANDROID_ADB_SERVER_PORT`` in the server's environment, started by adb when none runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
from collections.abc import Sequence
from dataclasses import dataclass

from hangar.errors import Unavailable
from hangar.rigs.backends.mobile import words

ADB_ENV = (
    "PATH",
    "HOME",
    "LANG",
    "TMPDIR",
    "ANDROID_ADB_SERVER_PORT",
    "ANDROID_SDK_ROOT",
    "ANDROID_HOME",
    "ANDROID_USER_HOME",
    "ANDROID_SDK_HOME",
    "ANDROID_AVD_HOME",
    "ANDROID_EMULATOR_HOME",
    "ADB_VENDOR_KEYS",
)
CALL_TIMEOUT_S = 60.0  # one adb call: a device that stops answering must not hold a rig busy forever
INSTALL_TIMEOUT_S = 300.0  # a large package over a slow link
MAX_OUTPUT = 4 << 20  # bytes kept of one stream: a command that floods its output is cut


def adb_path() -> str | None:
    return shutil.which("adb")


def adb_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k in ADB_ENV}


@dataclass(frozen=True)
class Ran:
    code: int
    stdout: bytes
    stderr: bytes
    truncated: bool = False

    def text(self) -> str:
        return self.stdout.decode("utf-8", "replace")

    def said(self) -> str:
        """The first line the device said (stdout, else stderr), cut short: for messages."""
        text = (self.stdout or self.stderr).decode("utf-8", "replace").strip()
        return text.splitlines()[0][:200] if text else f"exit code {self.code}"


async def run_program(exe: str, args: Sequence[str], *, timeout_s: float, what: str) -> Ran:
    """``exe`` with ``args`` in its own session, adb's environment only; ``Unavailable`` when it does not finish
    within ``timeout_s`` (then it and whatever it started are killed)."""
    proc = await asyncio.create_subprocess_exec(
        exe,
        *args,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=adb_env(),
        start_new_session=True,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout_s)
    except (TimeoutError, asyncio.CancelledError) as exc:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        await proc.wait()
        if isinstance(exc, asyncio.CancelledError):
            raise
        raise Unavailable(f"{what} did not finish within {timeout_s:g} s") from None
    cut = len(out) > MAX_OUTPUT or len(err) > MAX_OUTPUT
    return Ran(proc.returncode or 0, out[:MAX_OUTPUT], err[:MAX_OUTPUT], cut)


async def run_adb(args: Sequence[str], *, timeout_s: float = CALL_TIMEOUT_S, what: str = "adb") -> Ran:
    """``adb <args>``: its exit code and output; ``Unavailable`` when adb is missing or does not finish in time."""
    exe = adb_path()
    if exe is None:
        raise Unavailable("adb is not installed on this host (Debian package adb)")
    return await run_program(exe, args, timeout_s=timeout_s, what=what)


class Adb:
    """adb for one device, named by its serial (``emulator-5554``, ``host:port``, a USB serial)."""

    def __init__(self, serial: str) -> None:
        self.serial = serial

    async def shell(self, commands: Sequence[Sequence[str]], *, timeout_s: float = CALL_TIMEOUT_S) -> Ran:
        """Run ``commands`` (argv lists) on the device, as few shell calls as the line limit allows; the last
        call's exit code, every call's output. Stops at the first call that fails."""
        outs: list[bytes] = []
        errs: list[bytes] = []
        ran = Ran(0, b"", b"")
        for line in words.lines(commands):
            ran = await run_adb(["-s", self.serial, "shell", line], timeout_s=timeout_s, what="the device")
            outs.append(ran.stdout)
            errs.append(ran.stderr)
            if ran.code != 0:
                break
        return Ran(ran.code, b"".join(outs), b"".join(errs), ran.truncated)

    async def exec_out(self, argv: Sequence[str]) -> Ran:
        return await run_adb(["-s", self.serial, "exec-out", words.command_line(argv)], what="the device")

    async def install(self, local_apk: str) -> Ran:
        """``adb install -r`` of a package file only the server writes (``apk.staged``)."""
        return await run_adb(
            ["-s", self.serial, "install", "-r", local_apk], timeout_s=INSTALL_TIMEOUT_S, what="adb install"
        )

    async def state(self) -> str:
        """adb's word for the device: ``device`` when usable, ``unauthorized``, ``offline``... or ``absent``."""
        ran = await run_adb(["-s", self.serial, "get-state"], timeout_s=15, what="adb get-state")
        return ran.text().strip() if ran.code == 0 else "absent"

    async def connect(self) -> Ran:
        return await run_adb(["connect", self.serial], timeout_s=30, what=f"adb connect {self.serial}")

    async def disconnect(self) -> None:
        with contextlib.suppress(Unavailable):
            await run_adb(["disconnect", self.serial], timeout_s=15, what="adb disconnect")
