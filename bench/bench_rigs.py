"""Rigs benchmark: enclosure rig start (warm pack) to first exec result, exec round trips per second, and
resident memory per idle rig, each beside a peer measured in the same run:

- start: a bare ``bwrap`` over the same pack running ``true`` (the floor any namespace sandbox pays);
- exec: ``nsenter`` into the same rig's namespaces plus ``setpriv`` and ``bash -lc true`` per command (the
  way ``docker exec``-style tools run a command in a container), versus the rig's own exec channel;
- memory: the same idle figure for a rig, versus the published 150 ms target for start.

Run as root: ``.venv/bin/python bench/bench_rigs.py`` (builds the pack first if this machine has none).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hangar.core.guestacl import RIG_GID, RIG_UID
from hangar.rigs.backends.base import RigSpec
from hangar.rigs.backends.enclosure import EnclosureBackend, EnclosureRig
from hangar.rigs.images.builder import ensure_pack

PACKS = Path(os.environ.get("HANGAR_TEST_PACKS", str(Path.home() / ".cache" / "hangar-test" / "packs")))
STARTS = 12
EXEC_SECONDS = 3.0
IDLE_RIGS = 4
TARGET_MS = 150.0
RIG_ENV = {"HOME": "/home/rig", "USER": "rig", "PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}


def spec(i: int) -> RigSpec:
    return RigSpec(f"bench{i}", "bench", "terminal", 512, 2, frozenset({"pypi.org"}), None, None)


def bare_bwrap_ms(pack: Path) -> float:
    started = time.perf_counter()
    subprocess.run(
        ["bwrap", "--unshare-all", "--ro-bind", str(pack), "/", "--proc", "/proc", "--dev", "/dev", "/bin/true"],
        check=True,
    )
    return (time.perf_counter() - started) * 1000


def nsenter_exec_rate(pid1: int) -> float:
    enter = ["nsenter", "--target", str(pid1), "--mount", "--uts", "--ipc", "--net", "--pid", "--root", "--wd"]
    drop = ["/usr/bin/setpriv", f"--reuid={RIG_UID}", f"--regid={RIG_GID}", "--clear-groups"]
    argv = [*enter, *drop, "/bin/bash", "-lc", "true"]
    count, started = 0, time.perf_counter()
    while time.perf_counter() - started < EXEC_SECONDS:
        subprocess.run(argv, check=True, env=RIG_ENV)
        count += 1
    return count / (time.perf_counter() - started)


async def main() -> None:
    backend = EnclosureBackend(Path(tempfile.mkdtemp(prefix="hb-")) / "rigs", packs_root=PACKS)
    reason = backend.unavailable_reason()
    if reason:
        sys.exit(f"cannot run: {reason}")
    pack = (await ensure_pack(PACKS, lambda text: print(text, file=sys.stderr))).path

    starts: list[float] = []
    for i in range(STARTS):
        started = time.perf_counter()
        rig = await backend.start(spec(i), lambda _t: None)
        result = await rig.exec("echo ready", timeout_s=30)
        starts.append((time.perf_counter() - started) * 1000)
        assert result.stdout == "ready\n"
        await rig.aclose()
    bare = [bare_bwrap_ms(pack) for _ in range(STARTS)]

    rig = await backend.start(spec(100), lambda _t: None)
    count, began = 0, time.perf_counter()
    while time.perf_counter() - began < EXEC_SECONDS:
        await rig.exec("true", timeout_s=30)
        count += 1
    rig_rate = count / (time.perf_counter() - began)
    assert isinstance(rig, EnclosureRig) and rig.pid1 is not None
    peer_rate = await asyncio.to_thread(nsenter_exec_rate, rig.pid1)
    await rig.aclose()

    rigs = [await backend.start(spec(200 + i), lambda _t: None) for i in range(IDLE_RIGS)]
    await asyncio.sleep(1.0)
    idle = [await r.resident_mb() for r in rigs]
    for r in rigs:
        await r.park()
    parked = [await r.resident_mb() for r in rigs]
    for r in rigs:
        await r.aclose()

    med, p90 = statistics.median(starts), sorted(starts)[int(len(starts) * 0.9) - 1]
    print(f"rig start to first exec (warm pack): median {med:.0f} ms, p90 {p90:.0f} ms over {STARTS} rigs")
    print(f"  peer: bare bwrap running /bin/true: median {statistics.median(bare):.0f} ms")
    print(f"  versus the {TARGET_MS:.0f} ms target: {med / TARGET_MS:.2f}x")
    print(f"exec round trips: {rig_rate:.0f}/s through the enclosure's channel")
    print(f"  peer: nsenter + setpriv + bash -lc true into the same rig: {peer_rate:.0f}/s "
          f"(ratio {rig_rate / peer_rate:.2f})")  # fmt: skip
    idle_mb, parked_mb = statistics.median(idle), statistics.median(parked)
    print(f"resident memory per idle rig: median {idle_mb:.0f} MB (parked {parked_mb:.0f} MB)")


if __name__ == "__main__":
    asyncio.run(main())
