"""RPC round trips per second for a trivial read op (``server.info``), over one socket and over 50 concurrent
sockets, with p50/p99 latency. The server runs as its own process (``hangar serve``), the load generator in this one.

Run: .venv/bin/python bench/bench_rpc.py [--seconds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import websockets

BIN = Path(sys.executable).parent / "hangar"


def start_http_server(data_dir: str | Path) -> tuple[subprocess.Popen[str], str, str]:
    """``hangar serve`` on a free port: the process, its http:// origin and the owner's token."""
    token = subprocess.run(
        [str(BIN), "admin", "owner-token", "--data-dir", str(data_dir)], check=True, capture_output=True, text=True
    ).stdout.strip()
    proc = subprocess.Popen(
        [str(BIN), "serve", "--no-prepare-pack", "--no-site", "--port", "0", "--data-dir", str(data_dir)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("server: "):
            return proc, line.split(": ", 1)[1].strip(), token
    raise RuntimeError("server did not start")


def start_server(data_dir: str | Path) -> tuple[subprocess.Popen[str], str, str]:
    """As ``start_http_server``, with the server's RPC socket URL in place of its origin."""
    proc, origin, token = start_http_server(data_dir)
    return proc, origin.replace("http://", "ws://") + "/rpc", token


async def socket_load(url: str, token: str, seconds: float, window: int) -> list[float]:
    """Keep ``window`` requests in flight on one socket; returns per-request latencies in seconds."""
    latencies: list[float] = []
    async with websockets.connect(url, additional_headers={"Authorization": f"Bearer {token}"}) as ws:
        sent: dict[int, float] = {}
        next_id = 0
        deadline = time.perf_counter() + seconds

        async def send_one() -> None:
            nonlocal next_id
            next_id += 1
            sent[next_id] = time.perf_counter()
            await ws.send(json.dumps({"id": next_id, "op": "server.info", "args": {}}))

        for _ in range(window):
            await send_one()
        while sent:
            reply = json.loads(await ws.recv())
            assert reply["ok"], reply
            latencies.append(time.perf_counter() - sent.pop(reply["id"]))
            if time.perf_counter() < deadline:
                await send_one()
    return latencies


def report(name: str, lat: list[float], seconds: float) -> None:
    lat.sort()
    p50 = statistics.median(lat) * 1000
    p99 = lat[int(len(lat) * 0.99) - 1] * 1000
    print(f"{name:<34} {len(lat) / seconds:>10,.0f} ops/s   p50 {p50:6.2f} ms   p99 {p99:6.2f} ms")


async def main(seconds: float) -> None:
    with tempfile.TemporaryDirectory() as data_dir:
        proc, url, token = start_server(data_dir)
        try:
            await socket_load(url, token, 0.5, 8)  # warm up
            t0 = time.perf_counter()
            lat = await socket_load(url, token, seconds, 1)
            report("1 socket, 1 in flight (sequential)", lat, time.perf_counter() - t0)
            t0 = time.perf_counter()
            lat = await socket_load(url, token, seconds, 32)
            report("1 socket, 32 in flight", lat, time.perf_counter() - t0)
            t0 = time.perf_counter()
            results = await asyncio.gather(*(socket_load(url, token, seconds, 1) for _ in range(50)))
            report("50 sockets, 1 in flight each", [x for r in results for x in r], time.perf_counter() - t0)
        finally:
            proc.terminate()
            proc.wait(10)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=5.0)
    os.environ.pop("HANGAR_DATA_DIR", None)
    asyncio.run(main(parser.parse_args().seconds))
