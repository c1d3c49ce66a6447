"""What counting costs: ``server.info`` over one socket (32 in flight) against one server whose counting is turned
on and off between rounds (``metrics_server.py``, by ``SIGUSR1``), alternating, so both sides are the same process
on the same machine at nearly the same moment.

Printed: each side's throughput (every round, and the best), the server's CPU time per call on each side (user
and system time from ``/proc`` over every call it answered: the server answers on one thread, so this is what
bounds its throughput, and it moves far less than a round's rate with what else the machine runs), and the cost of
the one call counting adds to an op (``Metrics.rpc_call``) timed in this process.

Run: .venv/bin/python bench/bench_metrics.py [--seconds 2] [--rounds 16]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import timeit
from pathlib import Path

from bench_rpc import BIN, socket_load
from hangar.core.metrics import Metrics, Stopwatch

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
    """Microseconds one op call spends in counting, with metrics on and off, in this process."""
    n = 300_000
    on, off = Metrics(), Metrics(enabled=False)
    t_on = timeit.timeit(lambda: on.rpc_call("server.info", "socket", "ok", Stopwatch().seconds()), number=n)
    t_off = timeit.timeit(lambda: off.rpc_call("server.info", "socket", "ok", Stopwatch().seconds()), number=n)
    return t_on / n * 1e6, t_off / n * 1e6


async def main(seconds: float, rounds: int) -> None:
    rates: dict[str, list[float]] = {"on": [], "off": []}
    cpu: dict[str, float] = {"on": 0.0, "off": 0.0}
    calls: dict[str, int] = {"on": 0, "off": 0}
    with tempfile.TemporaryDirectory() as root:
        proc, url, token = start(Path(root))
        try:
            await socket_load(url, token, 1.0, 32)  # warm up
            side = "on"
            for _ in range(rounds * 2):  # on, off, on, off...
                used = cpu_seconds(proc.pid)
                done = await socket_load(url, token, seconds, 32)
                cpu[side] += cpu_seconds(proc.pid) - used
                calls[side] += len(done)
                rates[side].append(len(done) / seconds)
                proc.send_signal(signal.SIGUSR1)
                side = "off" if side == "on" else "on"
                await asyncio.sleep(0.05)
        finally:
            proc.terminate()
            proc.wait()
    per_call = {name: cpu[name] / calls[name] * 1e6 for name in cpu}
    for name in ("off", "on"):
        listed = ", ".join(f"{r:,.0f}" for r in rates[name])
        print(f"metrics {name:<3}: best {max(rates[name]):>7,.0f} ops/s (rounds: {listed})")
        print(f"            server CPU per call {per_call[name]:6.1f} us over {calls[name]:,} calls")
    print(f"cost of counting, server CPU per call: {(per_call['on'] / per_call['off'] - 1) * 100:+.1f}%")
    print(f"cost of counting, best round against best round: {(1 - max(rates['on']) / max(rates['off'])) * 100:+.1f}%")
    us_on, us_off = counting_cost_us()
    print(f"counting one call in process: {us_on:.2f} us on, {us_off:.2f} us off: {us_on - us_off:.2f} us a call")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--rounds", type=int, default=16)
    a = parser.parse_args()
    asyncio.run(main(a.seconds, a.rounds))
