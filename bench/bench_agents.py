"""Agent runs: (1) the time Hangar adds to an agent turn, dispatch to first relayed token, with a model server
that answers instantly, measured side by side with a client streaming from the same model server directly; and
(2) 100 concurrent agent runs in one workspace, checking that no turn event is lost.

Three processes: the Hangar server (``hangar serve``), a scripted OpenAI-compatible model server (the tests'
``FakeOpenAI`` under uvicorn), and this load generator.

Run: .venv/bin/python bench/bench_agents.py [--turns 40] [--runs 100] [--chunks 20]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.rpc import RpcClient  # noqa: E402

BIN = Path(sys.executable).parent / "hangar"
WORD = "tok "


def serve_model(port_file: str, chunks: int) -> None:
    """Child process: the scripted model server; every answer is ``chunks`` text deltas."""
    import uvicorn
    from tests.unit.agents.fake_openai import FakeOpenAI, Reply

    fake = FakeOpenAI(default=Reply(text=WORD * chunks, chunk_size=len(WORD)))
    fake.requests = _Discard()  # type: ignore[assignment]
    fake.headers = _Discard()  # type: ignore[assignment]
    config = uvicorn.Config(fake.app(), host="127.0.0.1", port=0, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)

    async def run() -> None:
        task = asyncio.create_task(server.serve())
        while not server.started:
            await asyncio.sleep(0.01)
        Path(port_file).write_text(str(server.servers[0].sockets[0].getsockname()[1]))
        await task

    asyncio.run(run())


class _Discard(list):  # type: ignore[type-arg]
    """The benchmark's model server keeps no request log."""

    def append(self, _item: Any) -> None:
        return None


def start(cmd: list[str], tmp: Path, name: str) -> subprocess.Popen[str]:
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=(tmp / f"{name}.log").open("w"), text=True)


def start_hangar(tmp: Path) -> tuple[subprocess.Popen[str], str, str]:
    data = str(tmp / "data")
    token = subprocess.run(
        [str(BIN), "admin", "owner-token", "--data-dir", data], check=True, capture_output=True, text=True
    ).stdout.strip()
    proc = start(
        [str(BIN), "serve", "--no-prepare-pack", "--no-site", "--port", "0", "--data-dir", data], tmp, "hangar"
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("server: "):
            return proc, line.split(": ", 1)[1].strip().replace("http://", "ws://") + "/rpc", token
    raise RuntimeError(f"hangar did not start; see {tmp}/hangar.log")


def start_model(tmp: Path, chunks: int) -> tuple[subprocess.Popen[str], str]:
    port_file = tmp / "model.port"
    proc = start([sys.executable, __file__, "--serve-model", str(port_file), "--chunks", str(chunks)], tmp, "model")
    for _ in range(500):
        if port_file.exists() and port_file.read_text():
            return proc, f"http://127.0.0.1:{port_file.read_text()}/v1"
        time.sleep(0.02)
    raise RuntimeError(f"model server did not start; see {tmp}/model.log")


async def direct_first_token(http: httpx.AsyncClient, base: str) -> float:
    """A client streaming from the model server itself: request to first content delta."""
    body = {"model": "bench", "stream": True, "messages": [{"role": "user", "content": "go"}]}
    t0 = time.perf_counter()
    first = None
    async with http.stream("POST", f"{base}/chat/completions", json=body) as resp:
        async for line in resp.aiter_lines():
            if first is None and line.startswith("data:") and '"content"' in line:
                first = time.perf_counter() - t0
    if first is None:
        raise RuntimeError("no content from the model server")
    return first


async def hangar_first_token(c: RpcClient, watch: Any, ws: str, agent: str, space: str) -> float:
    """``agents.run`` sent to the first ``agents.textDelta`` frame relayed on a space watch."""
    t0 = time.perf_counter()
    started = await c.call("agents.run", workspace_id=ws, agent_id=agent, space_id=space, prompt="go")
    first = None
    while True:
        frame = await watch.next(30)
        if frame["payload"].get("run_id") != started["runId"]:
            continue
        if frame["type"] == "agents.textDelta" and first is None:
            first = time.perf_counter() - t0
        if frame["type"] == "agents.runFinished":
            assert frame["payload"]["outcome"] == "ok", frame
            assert first is not None
            return first


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


async def concurrent_runs(c: RpcClient, ws: str, agent: str, runs: int, chunks: int) -> None:
    spaces = [
        (await c.call("spaces.create", workspace_id=ws, title=f"load {i}"))["id"] for i in range(max(1, runs // 10))
    ]
    watches = [await c.watch("spaces.watch", workspace_id=ws, space_id=s) for s in spaces]
    t0 = time.perf_counter()
    started = await asyncio.gather(
        *(
            c.call("agents.run", workspace_id=ws, agent_id=agent, space_id=spaces[i % len(spaces)], prompt="go")
            for i in range(runs)
        )
    )
    run_ids = {s["runId"] for s in started}
    relayed: dict[str, list[dict[str, Any]]] = {r: [] for r in run_ids}
    finished: set[str] = set()

    async def drain(watch: Any) -> None:
        while True:
            frame = await watch.next(120)
            rid = frame["payload"].get("run_id")
            if rid not in run_ids:
                continue
            relayed[rid].append(frame)
            if frame["type"] == "agents.runFinished":
                assert frame["payload"]["outcome"] == "ok", frame
                finished.add(rid)

    tasks = [asyncio.create_task(drain(w)) for w in watches]
    while finished != run_ids:
        await asyncio.sleep(0.01)
    wall = time.perf_counter() - t0
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    # No lost event: every run's live frames are exactly its persisted events (same sequence numbers), they
    # open with runStarted and close with runFinished around one whole turn, and the relayed text is the
    # model's text. Text deltas that queued up behind a busy database are merged, so their count varies.
    lost_runs = 0
    events = deltas = 0
    for rid, frames in relayed.items():
        persisted = (await c.call("runs.events", workspace_id=ws, runId=rid))["events"]
        types = [f["type"] for f in frames]
        text = "".join(f["payload"]["text"] for f in frames if f["type"] == "agents.textDelta")
        ok = (
            [f["seq"] for f in frames] == [e["seq"] for e in persisted]
            and types[:2] == ["agents.runStarted", "agents.turnStarted"]
            and types[-2:] == ["agents.turnFinished", "agents.runFinished"]
            and text == WORD * chunks
        )
        lost_runs += not ok
        events += len(frames)
        deltas += types.count("agents.textDelta")
    print(f"{runs} concurrent runs in one workspace, {chunks} model deltas each")
    print(f"  wall {wall * 1000:.0f} ms, {runs / wall:.1f} runs/s, {events} turn events relayed ({deltas} text deltas)")
    print(f"  runs with a lost or extra event, or wrong text: {lost_runs}")


async def main(turns: int, runs: int, chunks: int) -> None:
    with tempfile.TemporaryDirectory() as td:
        tmp = Path(td)
        hangar, url, token = start_hangar(tmp)
        model, base = start_model(tmp, chunks)
        try:
            async with RpcClient(url, token) as c, httpx.AsyncClient() as http:
                ws = (await c.call("workspaces.create", name="bench"))["id"]
                adapter = {"type": "openai", "baseUrl": base, "model": "bench", "historyLimit": 1}
                agent = (await c.call("agents.create", workspace_id=ws, name="bench", adapter=adapter))["id"]
                space = (await c.call("spaces.create", workspace_id=ws, title="latency"))["id"]
                watch = await c.watch("spaces.watch", workspace_id=ws, space_id=space)
                for _ in range(5):  # warm both paths (connections, caches)
                    await direct_first_token(http, base)
                    await hangar_first_token(c, watch, ws, agent, space)
                direct, via = [], []
                for _ in range(turns):
                    direct.append(await direct_first_token(http, base))
                    via.append(await hangar_first_token(c, watch, ws, agent, space))
                d50, h50 = statistics.median(direct), statistics.median(via)
                print(f"first token, {turns} turns (model answers instantly)")
                print(f"  direct to the model server   p50 {d50 * 1000:7.2f} ms   p95 {pct(direct, 95) * 1000:7.2f} ms")
                print(f"  through Hangar (RPC + watch) p50 {h50 * 1000:7.2f} ms   p95 {pct(via, 95) * 1000:7.2f} ms")
                print(f"  added by Hangar              p50 {(h50 - d50) * 1000:7.2f} ms   (target < 20 ms)")
                await watch.close()
                await concurrent_runs(c, ws, agent, runs, chunks)
        finally:
            for proc in (hangar, model):
                proc.terminate()
                proc.wait(10)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--chunks", type=int, default=20)
    parser.add_argument("--serve-model", default=None, help=argparse.SUPPRESS)
    ns = parser.parse_args()
    if ns.serve_model:
        serve_model(ns.serve_model, ns.chunks)
    else:
        asyncio.run(main(ns.turns, ns.runs, ns.chunks))
