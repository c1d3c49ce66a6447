"""Headless Chromium (Debian's package) for browser tests, driven over the DevTools protocol.

Chromium forks helpers (zygote, GPU, crash handler) that keep writing into the profile directory for a moment after
the browser process is gone, so the whole process group is killed and reaped before anyone removes the profile."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
from collections.abc import AsyncIterator
from pathlib import Path

CHROMIUM = shutil.which("chromium")
BASE_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-port=0",
)


@contextlib.asynccontextmanager
async def headless_chromium(profile: Path, url: str = "about:blank", *flags: str) -> AsyncIterator[str]:
    """Start Chromium on ``url`` with its own profile directory and yield the DevTools ``host:port``."""
    assert CHROMIUM is not None, "chromium is not installed (Makefile APT_PACKAGES)"
    proc = await asyncio.create_subprocess_exec(
        CHROMIUM,
        *BASE_FLAGS,
        *flags,
        f"--user-data-dir={profile}",
        url,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    try:
        assert proc.stderr is not None
        endpoint = ""
        while not endpoint:
            line = (await asyncio.wait_for(proc.stderr.readline(), 30)).decode()
            if not line:
                raise RuntimeError("chromium exited before opening DevTools")
            if "DevTools listening on ws://" in line:
                endpoint = line.split("ws://", 1)[1].split("/", 1)[0]
        yield endpoint
    finally:
        await _kill_group(proc.pid)
        await proc.wait()


async def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)
    # Helpers that are not our children are reaped by init; wait until the group is empty.
    for _ in range(200):
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        await asyncio.sleep(0.025)
