"""Confined shell steps: what running a step's script in its run's warm enclosure adds over running the same
script on the host, measured side by side in one run (target: under 10 ms added per step).

Both sides go through the same ``Confinement`` interface the ``shell.run`` body uses: ``RigConfinement`` (the
enclosure backend, one warm rig for the scope) and ``HostExecution`` (trusted host execution). Also reported:
the first step of a run, which boots the run's enclosure, and a job in a scope of its own (``run_alone``: an
agent run, a setup script), which boots an enclosure, runs the job and closes the enclosure.

Run as root: ``.venv/bin/python bench/bench_confined_shell.py`` (builds the pack first if this machine has none).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from hangar.core.confine import HOST, Confinement, Job, Scope, run_alone
from hangar.core.disks import ScopeDisks, detach
from hangar.rigs.backends.enclosure import EnclosureBackend
from hangar.rigs.confinement.scopes import RigConfinement
from hangar.rigs.images.builder import ensure_pack

PACKS = Path(os.environ.get("HANGAR_TEST_PACKS", str(Path.home() / ".cache" / "hangar-test" / "packs")))
STEPS = 60
ROUNDS = 3
SCRIPT = 'echo "step in $HANGAR_RUN_DIR" > out.txt; cat out.txt'


def p90(values: list[float]) -> float:
    return statistics.quantiles(values, n=10)[-1]


async def timed(confinement: Confinement, scope: Scope) -> float:
    started = time.perf_counter()
    done = await confinement.run(scope, Job(("bash", "-c", SCRIPT), {"HANGAR_RUN_DIR": "x"}))
    assert done.exit_code == 0, done.stderr
    return (time.perf_counter() - started) * 1000


async def alone(confinement: Confinement, scope: Scope) -> float:
    started = time.perf_counter()
    done = await run_alone(confinement, scope, Job(("bash", "-c", SCRIPT), {"HANGAR_RUN_DIR": "x"}))
    assert done.exit_code == 0, done.stderr
    return (time.perf_counter() - started) * 1000


async def main() -> None:
    await ensure_pack(PACKS, lambda text: print(text, file=sys.stderr))
    with tempfile.TemporaryDirectory(prefix="hbc-") as root:
        backend = EnclosureBackend(Path(root) / "rigs", packs_root=PACKS)
        reason = backend.unavailable_reason()
        if reason is not None:
            raise SystemExit(f"enclosures cannot run here: {reason}")
        # As the server has it: the run directory on a disk of its own (where this host can make one).
        enclosure = RigConfinement(backend, disks=ScopeDisks(Path(root) / "disks"))
        boots: list[float] = []
        confined: list[float] = []
        host: list[float] = []
        alones: list[float] = []
        try:
            for r in range(ROUNDS):
                scope = Scope(f"pipelineRun:bench{r}", "bench", Path(root) / "pipelines" / f"bench{r}")
                boots.append(await timed(enclosure, scope))
                for _ in range(STEPS):  # alternate, so both sides see the same machine load
                    confined.append(await timed(enclosure, scope))
                    host.append(await timed(HOST, scope))
                await enclosure.release(scope.key)
                detach(scope.workdir)
            for r in range(ROUNDS * 3):
                alones.append(await alone(enclosure, Scope(f"agentRun:bench{r}", "bench", Path(root) / f"run{r}")))
        finally:
            await enclosure.aclose()
    added = statistics.median(confined) - statistics.median(host)
    print(f"shell step, {ROUNDS} runs x {STEPS} steps, alternating")
    print(f"  first step of a run (boots its enclosure): median {statistics.median(boots):.1f} ms")
    print(f"  warm enclosure: p50 {statistics.median(confined):.2f} ms, p90 {p90(confined):.2f} ms")
    print(f"  host:           p50 {statistics.median(host):.2f} ms, p90 {p90(host):.2f} ms")
    print(f"  added by confinement per step (p50): {added:.2f} ms (target < 10 ms)")
    print(f"  a job in a scope of its own (boot, run, close): median {statistics.median(alones):.1f} ms")


if __name__ == "__main__":
    asyncio.run(main())
