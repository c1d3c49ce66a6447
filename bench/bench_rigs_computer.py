"""Computer rigs benchmark: an enclosure desktop (warm desktop pack) from open to its first screenshot, and a
screenshot round trip, each beside the same X server and window manager launched directly on the host in the same
run, the still taken and encoded the same way (``xwd -root`` turned into a PNG by ``engines.xwd``).

Run as root: ``.venv/bin/python bench/bench_rigs_computer.py`` (builds the desktop pack first if this machine has
none; the host side needs the packages of the Makefile's ``apt-bench-deps``).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from hangar.rigs.backends.base import RigSpec
from hangar.rigs.backends.desktopboot import X_SERVER
from hangar.rigs.backends.enclosure import EnclosureBackend
from hangar.rigs.engines.xwd import still_of
from hangar.rigs.images.builder import ensure_pack
from hangar.rigs.images.recipes import DESKTOP

PACKS = Path(os.environ.get("HANGAR_TEST_PACKS", str(Path.home() / ".cache" / "hangar-test" / "packs")))
OPENS = 5
SHOT_SECONDS = 4.0
AGENT_MAX = (1280, 800)
HOST_DISPLAY = ":73"
WM_WAIT_S = 30.0


def spec(i: int) -> RigSpec:
    return RigSpec(f"benchdesk{i}", "bench", "computer", 4096, 4, frozenset(), None, None, display=(1280, 800))


def host_argv() -> list[str]:
    """The rig's X server command line, on a display of the host's own and without the rig's socket path."""
    argv = [HOST_DISPLAY if a == X_SERVER[1] else a for a in X_SERVER]
    at = argv.index("-rfbunixpath")
    del argv[at : at + 4]  # the path and its mode
    return [*argv, "-geometry", "1280x800"]


def host_shot(env: dict[str, str]) -> None:
    dump = subprocess.run(["xwd", "-root", "-silent"], env=env, check=True, capture_output=True).stdout
    still_of(dump, *AGENT_MAX)


def host_desktop_ms() -> tuple[float, float]:
    """Open to first still, and a still's round trip, for the X server and Openbox run straight on the host."""
    env = {**os.environ, "DISPLAY": HOST_DISPLAY}
    started = time.perf_counter()
    server = subprocess.Popen(host_argv(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wm: subprocess.Popen[bytes] | None = None
    try:
        socket = Path(f"/tmp/.X11-unix/X{HOST_DISPLAY[1:]}")
        while not socket.exists():
            time.sleep(0.01)
        wm = subprocess.Popen(["openbox", "--sm-disable"], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)  # fmt: skip
        deadline = time.monotonic() + WM_WAIT_S
        while b"window id" not in subprocess.run(["xprop", "-root", "_NET_SUPPORTING_WM_CHECK"], env=env,
                                                 capture_output=True).stdout:  # fmt: skip
            if time.monotonic() > deadline:
                raise RuntimeError("openbox did not start on the host")
            time.sleep(0.05)
        host_shot(env)
        first = (time.perf_counter() - started) * 1000
        count, began = 0, time.perf_counter()
        while time.perf_counter() - began < SHOT_SECONDS:
            host_shot(env)
            count += 1
        return first, (time.perf_counter() - began) * 1000 / count
    finally:
        for proc in (wm, server):
            if proc is not None:
                proc.terminate()
                proc.wait()


async def rig_desktop_ms(backend: EnclosureBackend, i: int) -> tuple[float, float, float]:
    """Open to first still, a still's round trip, and the desktop's own part of the open: from the moment the
    sandbox is up (the step "starting the desktop") to the first still."""
    desktop_from: list[float] = []

    def progress(step: str) -> None:
        if step == "starting the desktop":
            desktop_from.append(time.perf_counter())

    started = time.perf_counter()
    rig = await backend.start(spec(i), progress)
    try:
        desktop = rig.desktop()
        await desktop.screenshot(*AGENT_MAX)
        done = time.perf_counter()
        first, own = (done - started) * 1000, (done - desktop_from[0]) * 1000
        count, began = 0, time.perf_counter()
        while time.perf_counter() - began < SHOT_SECONDS:
            await desktop.screenshot(*AGENT_MAX)
            count += 1
        return first, (time.perf_counter() - began) * 1000 / count, own
    finally:
        await rig.aclose()


async def main() -> None:
    missing = [tool for tool in ("Xvnc", "openbox", "xwd", "xprop") if shutil.which(tool) is None]
    if missing:
        raise SystemExit(f"the host baseline needs {', '.join(missing)}: run `make apt-bench-deps`")
    await ensure_pack(PACKS, print, DESKTOP)
    rig_runs, host_runs = [], []
    with tempfile.TemporaryDirectory(prefix="bd-", dir="/tmp") as root:
        backend = EnclosureBackend(Path(root) / "rigs", packs_root=PACKS)
        for i in range(OPENS):  # interleaved, so both sides see the same load
            rig_runs.append(await rig_desktop_ms(backend, i))
            host_runs.append(host_desktop_ms())  # nothing else runs meanwhile: blocking is fine here
    own = statistics.median(r[2] for r in rig_runs)
    print(f"of which the enclosure's desktop itself (X server and window manager up, first still): {own:.0f} ms")
    for what, index in (("open to first screenshot", 0), ("screenshot round trip", 1)):
        rig_ms = statistics.median(r[index] for r in rig_runs)
        host_ms = statistics.median(r[index] for r in host_runs)
        print(f"{what}: enclosure desktop {rig_ms:.0f} ms, host desktop {host_ms:.0f} ms, "
              f"ratio {rig_ms / host_ms:.2f} (median of {OPENS})")  # fmt: skip


if __name__ == "__main__":
    asyncio.run(main())
