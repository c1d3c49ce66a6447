"""Pipeline engine overhead: Hangar (durable, SQLite) against LangGraph (in memory), same graphs, same run.

Two shapes of no-op steps: (1) a chain of 1,000 steps, (2) a fan-out of 200 parallel steps joined by one
step. Hangar persists every step change in the workspace database (WAL) before it takes effect; LangGraph
runs the same graph shapes in memory without a checkpointer. The bodies do nothing, so the time per step
is the engine's overhead. Each measurement is the best of ``--repeat`` runs (median also printed).

    .venv/bin/python bench/bench_pipelines.py [--repeat 5] [--chain 1000] [--fan 200]

LangGraph is installed only for this benchmark (not a project dependency):

    .venv/bin/pip install langgraph
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hangar.config import Settings
from hangar.core.part_def import CORE_PART
from hangar.identity.part import IDENTITY_PART
from hangar.pipelines import template as tpl
from hangar.pipelines.engine import PipelineEngine
from hangar.pipelines.part import PIPELINES_CLI_PART
from hangar.pipelines.store import PipelineStore
from hangar.server.context_factory import open_context

WS = "bench"


def chain_template(n: int) -> dict[str, Any]:
    steps: list[dict[str, Any]] = [{"id": "start", "kind": "trigger", "body": "pipeline.trigger"}]
    for i in range(n - 1):
        src = "start" if i == 0 else f"s{i - 1}"
        steps.append({"id": f"s{i}", "kind": "listen", "body": "pipeline.trigger", "trigger": {"sourceStepIds": [src]}})
    return {"id": f"chain{n}", "steps": steps}


def fan_template(n: int) -> dict[str, Any]:
    steps: list[dict[str, Any]] = [{"id": "start", "kind": "trigger", "body": "pipeline.trigger"}]
    for i in range(n):
        steps.append(
            {"id": f"f{i}", "kind": "listen", "body": "pipeline.trigger", "trigger": {"sourceStepIds": ["start"]}}
        )
    steps.append(
        {"id": "join", "kind": "join", "body": "pipeline.trigger", "waitForStepIds": [f"f{i}" for i in range(n)]}
    )
    return {"id": f"fan{n}", "steps": steps}


class CountingStore(PipelineStore):
    """Counts the transactions the runner writes (one per scheduling tick)."""

    commits = 0

    async def commit(self, ws: str, run_id: str, tick: Any) -> int:
        CountingStore.commits += 1
        return await super().commit(ws, run_id, tick)


async def hangar_runs(raw: dict[str, Any], repeat: int) -> tuple[list[float], int, int]:
    with tempfile.TemporaryDirectory(prefix="bench-pipelines-") as tmp:
        parts = [CORE_PART, IDENTITY_PART, PIPELINES_CLI_PART]
        async with open_context(Settings(data_dir=Path(tmp)), parts=parts) as ctx:
            await ctx.dbs.workspace(WS, create=True)
            engine = PipelineEngine.from_app(ctx)
            engine.store = CountingStore(ctx.dbs.workspace)
            template = tpl.load(raw, engine.bodies).template
            times = []
            commits = 0
            try:
                for _ in range(repeat):
                    CountingStore.commits = 0
                    t0 = time.perf_counter()
                    run_id = await engine.start_run(WS, template)
                    assert run_id is not None
                    await engine.wait(run_id)
                    times.append(time.perf_counter() - t0)
                    commits = CountingStore.commits
                    snap = await engine.snapshot(WS, run_id)
                    assert snap["status"] == "completed", snap["status"]
                    assert all(s["status"] == "completed" for s in snap["steps"].values())
            finally:
                await engine.aclose()
    return times, len(template.steps), commits


def langgraph_builders() -> tuple[Callable[[int], Any], Callable[[int], Any]] | None:
    try:
        from typing import TypedDict

        from langgraph.graph import END, START, StateGraph
    except ImportError:
        return None

    class State(TypedDict, total=False):
        x: int

    def noop(state: State) -> dict[str, Any]:
        return {}

    def chain(n: int) -> Any:
        b = StateGraph(State)
        for i in range(n):
            b.add_node(f"s{i}", noop)
        b.add_edge(START, "s0")
        for i in range(1, n):
            b.add_edge(f"s{i - 1}", f"s{i}")
        b.add_edge(f"s{n - 1}", END)
        return b.compile()

    def fan(n: int) -> Any:
        b = StateGraph(State)
        for i in range(n):
            b.add_node(f"f{i}", noop)
        b.add_node("join", noop)
        for i in range(n):
            b.add_edge(START, f"f{i}")
        b.add_edge([f"f{i}" for i in range(n)], "join")
        b.add_edge("join", END)
        return b.compile()

    return chain, fan


async def langgraph_runs(graph: Any, repeat: int) -> dict[str, list[float]]:
    """Both of LangGraph's APIs; the faster one is what Hangar is compared with."""
    cfg = {"recursion_limit": 100_000}
    out: dict[str, list[float]] = {"sync": [], "async": []}
    for _ in range(repeat):
        t0 = time.perf_counter()
        await asyncio.to_thread(graph.invoke, {"x": 0}, cfg)
        out["sync"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        await graph.ainvoke({"x": 0}, cfg)
        out["async"].append(time.perf_counter() - t0)
    return out


def row(shape: str, engine: str, steps: int, times: list[float], extra: str = "") -> float:
    best = min(times)
    med = statistics.median(times)
    print(
        f"{shape:<14} {engine:<28} {steps:>6} {best * 1000:>10.1f} {med * 1000:>10.1f} "
        f"{best / steps * 1000:>9.3f} {steps / best:>10.0f}  {extra}"
    )
    return best


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--chain", type=int, default=1000)
    parser.add_argument("--fan", type=int, default=200)
    args = parser.parse_args()

    builders = langgraph_builders()
    print(f"{'shape':<14} {'engine':<28} {'steps':>6} {'best ms':>10} {'median ms':>10} {'ms/step':>9} {'steps/s':>10}")
    results: dict[str, dict[str, float]] = {}
    # LangGraph's graphs have the same steps minus Hangar's trigger node (its START is not a node).
    for name, raw, n in (
        (f"chain {args.chain}", chain_template(args.chain), args.chain),
        (f"fan-out {args.fan}", fan_template(args.fan), args.fan + 1),
    ):
        times, steps, commits = await hangar_runs(raw, args.repeat)
        results[name] = {"hangar": row(name, "hangar (SQLite, durable)", steps, times, f"{commits} transactions")}
        if builders is not None:
            graph = builders[0](n) if name.startswith("chain") else builders[1](args.fan)
            lg = await langgraph_runs(graph, args.repeat)
            for api, ts in lg.items():
                results[name][f"langgraph {api}"] = row(name, f"langgraph {api} (in memory)", n, ts)
    if builders is None:
        print("\nLangGraph is not installed, so it was skipped. Install it for the comparison (benchmark only):")
        print("    .venv/bin/pip install langgraph")
        return
    print()
    for name, res in results.items():
        peer = min(v for k, v in res.items() if k != "hangar")
        print(
            f"{name}: durable Hangar takes {res['hangar'] / peer:.2f}x the time of the faster in-memory LangGraph API"
        )


if __name__ == "__main__":
    asyncio.run(main())
