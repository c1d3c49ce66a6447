"""What counting costs: ``server.info`` over one socket (32 in flight) against one server whose counting is turned
on and off between rounds (``metrics_server.py``, by ``SIGUSR1``), so both sides are the same process on the same
machine at nearly the same moment.

Rounds come in pairs, ordered on-off, off-on, on-off... (ABBA), so a drift of the machine's load during the run
weighs on both sides alike. Each pair gives one figure: the server's CPU time per call with counting on against
off in that pair (user and system time from ``/proc`` over every call it answered: the server answers on one
thread, so this is what bounds its throughput, and it moves far less than a round's rate with what else the
machine runs). Printed: the median of the pairs' costs and its spread (quartiles, and the lowest and highest), the
share of pairs where counting cost anything, the same for throughput, and the cost of the one call counting adds
to an op (``Metrics.rpc_call``) timed in this process.

Run: .venv/bin/python bench/bench_metrics.py [--seconds 1.5] [--pairs 30]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import timeit
from pathlib import Path

from bench_rpc import BIN, socket_load
from hangar.core.metrics import Metrics

TICKS = os.sysconf("SC_CLK_TCK")


def start(data_dir: Path) -> tuple[subprocess.Popen[str], str, str]:
    """``metrics_server.py`` on a free port (counting on): the process, its socket URL, the owner's token."""
    token = subprocess.run(
        [str(BIN), "admin", "owner-token", "--data-dir", str(data_dir)], check=True, capture_output=True, text=True
    ).stdout.strip()
    script = Path(__file__).with_name("metrics_server.py")
    proc = subprocess.Popen([sys.executable, str(script), str(data_dir)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("server: "):
            return proc, line.split(": ", 1)[1].strip().replace("http://", "ws://") + "/rpc", token
    raise RuntimeError("server did not start")


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of process ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def counting_cost_us() -> tuple[float, float]:
    """Microseconds one op call spends in counting, with metrics on and off, in this process: medians of 15
    alternating samples of 100,000 calls each (a shared machine's load moves between samples)."""
    n = 100_000
    on, off = Metrics(), Metrics(enabled=False)
    took: dict[str, list[float]] = {"on": [], "off": []}
    for _ in range(15):
        for name, metrics in (("on", on), ("off", off)):
            took[name].append(
                timeit.timeit(functools.partial(metrics.rpc_call, "server.info", "socket", "ok", 7e-5), number=n)
                / n
                * 1e6
            )
    return statistics.median(took["on"]), statistics.median(took["off"])


def quartiles(values: list[float]) -> tuple[float, float, float]:
    q1, q2, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q1, q2, q3


def spread(label: str, costs: list[float]) -> None:
    q1, median, q3 = quartiles(costs)
    above = sum(1 for c in costs if c > 0) / len(costs) * 100
    print(
        f"{label}: median {median:+.1f}% (quartiles {q1:+.1f}% to {q3:+.1f}%, lowest {min(costs):+.1f}%, highest "
        f"{max(costs):+.1f}%; counting cost more in {above:.0f}% of {len(costs)} pairs)"
    )


async def main(seconds: float, pairs: int) -> None:
    rounds: list[tuple[str, float, float]] = []  # (side, calls per second, server CPU us per call)
    with tempfile.TemporaryDirectory() as root:
        proc, url, token = start(Path(root))
        try:
            await socket_load(url, token, 2.0, 32)  # warm up
            side = "on"
            for n in range(pairs):
                order = ("on", "off") if n % 2 == 0 else ("off", "on")
                for want in order:
                    if side != want:
                        proc.send_signal(signal.SIGUSR1)
                        side = want
                        await asyncio.sleep(0.05)
                    used = cpu_seconds(proc.pid)
                    done = await socket_load(url, token, seconds, 32)
                    cpu = cpu_seconds(proc.pid) - used
                    rounds.append((side, len(done) / seconds, cpu / len(done) * 1e6))
        finally:
            proc.terminate()
            proc.wait()
    cpu_costs, rate_costs = [], []
    for i in range(0, len(rounds), 2):
        by = {r[0]: r for r in rounds[i : i + 2]}
        cpu_costs.append((by["on"][2] / by["off"][2] - 1) * 100)
        rate_costs.append((1 - by["on"][1] / by["off"][1]) * 100)
    for name in ("off", "on"):
        mine = [r for r in rounds if r[0] == name]
        per_call = statistics.median(r[2] for r in mine)
        rates = [r[1] for r in mine]
        print(
            f"metrics {name:<3}: server CPU per call, median {per_call:6.1f} us; throughput median "
            f"{statistics.median(rates):,.0f} ops/s (rounds from {min(rates):,.0f} to {max(rates):,.0f})"
        )
    spread("cost of counting, server CPU per call", cpu_costs)
    spread("cost of counting, throughput", rate_costs)
    us_on, us_off = counting_cost_us()
    print(f"counting one call in process: {us_on:.2f} us on, {us_off:.2f} us off: {us_on - us_off:.2f} us a call")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=1.5)
    parser.add_argument("--pairs", type=int, default=30)
    a = parser.parse_args()
    asyncio.run(main(a.seconds, a.pairs))
