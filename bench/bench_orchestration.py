"""Orchestration overhead: what Hangar adds per sub-ticket beyond the agent's own run.

An orchestration of ``--nodes`` sub-tickets (20) on a running server (the tests' in-process server, the real RPC
client), every agent on a scripted model that answers at once. Two shapes: a chain (each sub-ticket after the one
before, so the sub-tickets run one at a time) and a fan (all independent, run at once). Timed from the approval of
every node to the orchestration's ``completed`` (the sub-tickets, the synthesis and the deliverable). Beside it,
the same number of bare agent runs one after another (``agents.run`` then ``runs.get`` until finished) in one
space. Per sub-ticket, the orchestration does a gate step, a space of its own, an agent step and its share of the
join; the difference between a chained sub-ticket and a bare run is that overhead. Median of ``--repeat`` runs.

    .venv/bin/python bench/bench_orchestration.py [--nodes 20] [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.integration.test_orchestration import start  # noqa: E402
from tests.support.rpc import RpcClient  # noqa: E402
from tests.support.server import running_server  # noqa: E402
from tests.unit.agents.fake_openai import FakeOpenAI, Reply, call, running_fake_openai  # noqa: E402
from tests.unit.agents.support import server_parts  # noqa: E402


def plan(n: int, chain: bool) -> Reply:
    subs = [{"key": f"n{i}", "title": f"Part {i}", "dependsOn": [f"n{i - 1}"] if chain and i else []} for i in range(n)]
    return call("submit_output", {"subTickets": subs})


async def wait_status(c: RpcClient, ws: str, oid: str, statuses: set[str]) -> dict[str, Any]:
    while True:
        orch: dict[str, Any] = await c.call("orchestration.get", workspace_id=ws, orchestrationId=oid)
        if orch["status"] in statuses:
            return orch
        await asyncio.sleep(0.01)


async def orchestrate(c: RpcClient, fake: FakeOpenAI, ws: str, agents: dict[str, str], n: int, chain: bool) -> float:
    ticket = await c.call("tickets.create", workspace_id=ws, title=f"Bench {'chain' if chain else 'fan'}")
    fake.script("plan", plan(n, chain))
    orch = await start(c, ws, ticket["id"], {**agents, "synth": agents["work"]})
    await wait_status(c, ws, orch["id"], {"planned"})
    started = time.perf_counter()
    await c.call("orchestration.approve", workspace_id=ws, orchestrationId=orch["id"], all=True)
    done = await wait_status(c, ws, orch["id"], {"completed", "failed"})
    assert done["status"] == "completed", done
    return time.perf_counter() - started


async def bare_runs(c: RpcClient, ws: str, agent: str, n: int) -> float:
    space = await c.call("spaces.create", workspace_id=ws, title="bare")
    started = time.perf_counter()
    for _ in range(n):
        run = await c.call("agents.run", workspace_id=ws, agent_id=agent, space_id=space["id"], prompt="Work")
        while (await c.call("runs.get", workspace_id=ws, runId=run["runId"]))["status"] != "finished":
            await asyncio.sleep(0.01)
    return time.perf_counter() - started


async def main(n: int, repeat: int) -> None:
    fake = FakeOpenAI(default=Reply(text="result", chunk_size=16))
    with tempfile.TemporaryDirectory() as tmp:
        async with (
            running_fake_openai(fake),
            running_server(Path(tmp) / "data", parts=server_parts()) as srv,
            RpcClient(srv.ws_url, srv.owner_token) as c,
        ):
            ws = await srv.new_workspace("bench")
            agents = {}
            for m in ("plan", "work"):
                adapter = {"type": "openai", "baseUrl": fake.url, "model": m}
                agents[m] = (await c.call("agents.create", workspace_id=ws, name=m, adapter=adapter))["id"]
            chain, fan, bare = [], [], []
            for _ in range(repeat):
                bare.append(await bare_runs(c, ws, agents["work"], n + 1))
                chain.append(await orchestrate(c, fake, ws, agents, n, chain=True))
                fan.append(await orchestrate(c, fake, ws, agents, n, chain=False))
    per_bare = statistics.median(bare) / (n + 1)
    t_chain, t_fan = statistics.median(chain), statistics.median(fan)
    print(f"{n} sub-tickets, median of {repeat}; the model answers at once")
    print(f"bare agent run, one after another:      {per_bare * 1000:7.1f} ms per run")
    print(f"orchestration, chained (one at a time): {t_chain:7.2f} s, {t_chain / n * 1000:7.1f} ms per sub-ticket")
    print(f"orchestration, fan (all at once):       {t_fan:7.2f} s, {t_fan / n * 1000:7.1f} ms per sub-ticket")
    # The synthesis is one more agent run: (n + 1) runs in the chain, against (n + 1) bare runs.
    overhead = (t_chain - statistics.median(bare)) / n
    print(f"overhead per sub-ticket beyond its agent run (chain): {overhead * 1000:7.1f} ms")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    asyncio.run(main(a.nodes, a.repeat))
