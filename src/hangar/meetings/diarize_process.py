"""Diarisation apart from the server: ``meeting.diarize`` runs ``hangar.meetings.diarize_child`` in a child Python
process, confined like any program fed hostile input (``hangar.core.hosttool``: no network, nothing of the host
readable but ``/usr``, the server's Python and the server's own code, nothing writable but a private ``/tmp``),
with its memory, CPU time and wall clock bounded. A long or hostile recording then takes the child's memory and
CPU, never the server's. The server opens the retained channels itself (server-owned files named by its own
records, never through a symlink) and hands the child their descriptors; the child answers one JSON object on its
stdout, read up to ``MAX_ANSWER`` bytes.

A child that passes a limit, dies or answers nothing readable fails the step with an error naming what happened
(and, for a limit, the setting that moves it); nothing stored changes. Limits, server settings read on every run:

- ``meetings.diarizationMemoryMb``: the child's address space, default 4096 MB (from 64 to 65536).
- ``meetings.diarizationCpuSeconds``: the child's CPU time, default 1800 s (from 1 to 86400); its wall clock is
  twice that, and then its process group is killed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import hangar
from hangar.core.confine import trusted_host_exec
from hangar.core.context import AppContext
from hangar.core.hosttool import MiB, Ran, ToolLimits, python_mounts, run_tool
from hangar.core.settings import SettingSpec, strict_int
from hangar.errors import InvalidArgs, Refused, Unavailable
from hangar.meetings import files
from hangar.meetings.routes import int_setting

MEMORY_SETTING = "meetings.diarizationMemoryMb"
DEFAULT_MEMORY_MB, MEMORY_MB_RANGE = 4096, (64, 65536)
CPU_SETTING = "meetings.diarizationCpuSeconds"
DEFAULT_CPU_S, CPU_S_RANGE = 1800, (1, 86400)
MAX_ANSWER = 16 * MiB  # the child's JSON: some thousands of spans and a few voiceprints
GUEST_CODE = "/code"  # where the server's own package is mounted in the child's sandbox
# The child writes no file; numpy's threads count as processes.
BASE_LIMITS = ToolLimits(seconds=2.0 * DEFAULT_CPU_S, cpu_s=DEFAULT_CPU_S, memory=DEFAULT_MEMORY_MB * MiB,
                         file_size=16 * MiB, processes=64, output=MAX_ANSWER)  # fmt: skip
# ``-I``: nothing of the environment or the working directory steers the interpreter; the server's package is
# found at GUEST_CODE (argv[1]), whether installed or a source checkout.
_BOOT = (
    "import runpy, sys; sys.path.insert(0, sys.argv.pop(1)); "
    "runpy.run_module(sys.argv.pop(1), run_name='__main__', alter_sys=True)"
)

SETTINGS = [
    SettingSpec(
        MEMORY_SETTING,
        f"The memory of meeting diarisation's own process, in MB (default {DEFAULT_MEMORY_MB}, from "
        f"{MEMORY_MB_RANGE[0]} to {MEMORY_MB_RANGE[1]}).",
        strict_int(MEMORY_SETTING, *MEMORY_MB_RANGE),
    ),
    SettingSpec(
        CPU_SETTING,
        f"The CPU time of meeting diarisation's own process, in seconds; its wall clock is twice that (default "
        f"{DEFAULT_CPU_S}, from {CPU_S_RANGE[0]} to {CPU_S_RANGE[1]}).",
        strict_int(CPU_SETTING, *CPU_S_RANGE),
    ),
]


async def limits_of(app: AppContext) -> ToolLimits:
    """The child's limits from the server settings, read on every run (an owner may change them at any time)."""
    memory_mb = await int_setting(app, MEMORY_SETTING, DEFAULT_MEMORY_MB)
    cpu_s = await int_setting(app, CPU_SETTING, DEFAULT_CPU_S)
    return dataclasses.replace(BASE_LIMITS, memory=memory_mb * MiB, cpu_s=cpu_s, seconds=2.0 * cpu_s)


def _code_root() -> Path:
    return Path(hangar.__file__).resolve().parent.parent


def _failure(ran: Ran, limits: ToolLimits) -> str:
    """Why the child gave no answer, in words, naming the setting that moves the limit it passed."""
    if ran.code is None:
        return (f"it did not finish within {limits.seconds:g} s of wall clock (twice {CPU_SETTING}, "
                f"{limits.cpu_s} s) and was killed")  # fmt: skip
    if ran.ended_by(signal.SIGXCPU) or ran.ended_by(signal.SIGKILL):
        return f"it used its {limits.cpu_s} s of CPU time ({CPU_SETTING}) and was killed"
    err = ran.stderr.decode("utf-8", "replace")
    lowered = err.lower()  # Python's MemoryError, numpy's "Unable to allocate", OpenBLAS's "Memory allocation"
    if any(sign in lowered for sign in ("memoryerror", "unable to allocate", "memory allocation", "cannot allocate")):
        return f"it ran out of its {limits.memory // MiB} MB of memory ({MEMORY_SETTING})"
    if ran.overflowed:
        return f"its answer passed {MAX_ANSWER} bytes"
    lines = [ln.strip() for ln in err.splitlines() if ln.strip()]
    return f"it exited with status {ran.code} ({lines[-1][:300] if lines else 'no reason given'})"


async def run_child(
    argv: Sequence[str],
    fds: Sequence[int],
    limits: ToolLimits,
    *,
    mounts: Sequence[tuple[Path, str]] = (),
    env: dict[str, str] | None = None,
    confined: bool = True,
) -> dict[str, Any]:
    """Run the child ``argv`` (the server's Python, and ``mounts``) confined under ``limits`` and read its answer:
    the JSON object it printed (exit 0). InvalidArgs for audio it refused (exit 2, ``{"error", "field"}``), Refused
    for a limit it passed, Unavailable for a child that failed otherwise; each names what happened."""
    mounts = [*python_mounts(), *mounts]
    ran = await run_tool(argv, limits, mounts=mounts, fds=fds, env=env, confined=confined)
    answer: Any = None
    if not ran.overflowed and ran.code in (0, 2):
        with contextlib.suppress(ValueError):
            answer = json.loads(ran.stdout)
    if ran.code == 2 and isinstance(answer, dict) and isinstance(answer.get("error"), str):
        field = answer.get("field")
        raise InvalidArgs(answer["error"][:1000], field=field if isinstance(field, str) else None)
    if ran.code == 0 and isinstance(answer, dict):
        return answer
    why = _failure(ran, limits)
    if ran.code is None or "(meetings." in why:
        raise Refused(f"diarisation failed: {why}; nothing stored changed")
    raise Unavailable(f"diarisation failed: {why}; nothing stored changed")


async def diarised_apart(
    channels: Sequence[Path], max_speakers: int, limits: ToolLimits, *, confined: bool = True
) -> dict[str, Any]:
    """The child's answer for the retained ``channels`` (server-owned paths, opened here): ``{"seconds", "spans",
    "embeddings"}``, its shape unchecked (the caller checks it); errors as ``run_child``'s."""
    fds: list[int] = []
    try:
        for path in channels:
            fds.append(files.open_file(path))  # handed on by the start (pass_fds), closed here after
        module = __name__.rpartition(".")[0] + ".diarize_child"
        argv = [sys.executable, "-I", "-c", _BOOT, GUEST_CODE, module, str(max_speakers), *map(str, fds)]
        mounts = [(_code_root(), GUEST_CODE)]
        # numpy's thread pools: one thread each, so the process count and memory do not grow with the host's cores.
        env = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        return await run_child(argv, fds, limits, mounts=mounts, env=env, confined=confined)
    finally:
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)


async def diarise(app: AppContext, channels: Sequence[Path], max_speakers: int) -> dict[str, Any]:
    """``diarised_apart`` under the server's settings: confined where bubblewrap is installed; else only where the
    server owner switched on trusted host execution (then as a plain child process, with the same limits)."""
    confined = shutil.which("bwrap") is not None
    if not confined and not await trusted_host_exec(app):
        raise Unavailable("diarisation runs confined, and bubblewrap (bwrap) is not installed")
    return await diarised_apart(channels, max_speakers, await limits_of(app), confined=confined)
