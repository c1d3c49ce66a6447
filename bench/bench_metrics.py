"""What counting costs: ``server.info`` round trips per second over one socket (32 in flight) against a server with
metrics on and one with them off (``HANGAR_METRICS=false``), both running at once in this run, measured in
alternating rounds so both see the same machine. Prints each side's rate and the cost as a share of throughput.

Run: .venv/bin/python bench/bench_metrics.py [--seconds 2] [--rounds 12]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
from pathlib import Path

from bench_rpc import socket_load, start_server


def start(data_dir: Path, metrics: bool) -> tuple[object, str, str]:
    before = os.environ.get("HANGAR_METRICS")
    os.environ["HANGAR_METRICS"] = "true" if metrics else "false"
    try:
        return start_server(data_dir)
    finally:
        if before is None:
            del os.environ["HANGAR_METRICS"]
        else:
            os.environ["HANGAR_METRICS"] = before


async def main(seconds: float, rounds: int) -> None:
    with tempfile.TemporaryDirectory() as root:
        on_proc, on_url, on_token = start(Path(root) / "on", True)
        off_proc, off_url, off_token = start(Path(root) / "off", False)
        rates: dict[str, list[float]] = {"on": [], "off": []}
        try:
            await socket_load(on_url, on_token, 1.0, 32)  # warm both
            await socket_load(off_url, off_token, 1.0, 32)
            for i in range(rounds):
                order = [("on", on_url, on_token), ("off", off_url, off_token)]
                for name, url, token in order if i % 2 == 0 else reversed(order):
                    done = await socket_load(url, token, seconds, 32)
                    rates[name].append(len(done) / seconds)
        finally:
            for proc in (on_proc, off_proc):
                proc.terminate()  # type: ignore[attr-defined]
                proc.wait()  # type: ignore[attr-defined]
    # Other work on the machine moves whole rounds; the best round of each side and the median of the rounds
    # taken back to back are what counting itself costs, far less than the spread between rounds.
    best_on, best_off = max(rates["on"]), max(rates["off"])
    paired = sorted(off / on - 1 for on, off in zip(rates["on"], rates["off"], strict=True))
    print(f"server.info, metrics off: best {best_off:>8,.0f} ops/s  (rounds: {_listed(rates['off'])})")
    print(f"server.info, metrics on:  best {best_on:>8,.0f} ops/s  (rounds: {_listed(rates['on'])})")
    print(f"cost of counting, best against best: {(best_off - best_on) / best_off * 100:+.1f}% of throughput")
    print(f"cost of counting, median of paired rounds: {statistics.median(paired) * 100:+.1f}% (target: under 2%)")


def _listed(rates: list[float]) -> str:
    return ", ".join(f"{r:,.0f}" for r in rates)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--rounds", type=int, default=12)
    a = parser.parse_args()
    asyncio.run(main(a.seconds, a.rounds))
