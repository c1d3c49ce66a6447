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
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from hangar.config import Settings
from hangar.identity.part import IDENTITY_PART
from hangar.oversight import OVERSIGHT_PART
from hangar.pipelines import BodyRegistry
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

    async def commit(self, ws: str, run_id: str, tick: Any, now: Any) -> Any:
        CountingStore.commits += 1
        return await super().commit(ws, run_id, tick, now)


class Timing:
    def __init__(self) -> None:
        self.wall: list[float] = []
        self.cpu: list[float] = []

    async def measure(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> Any:
        w0, c0 = time.perf_counter(), time.process_time()
        result = await fn(*args)
        self.wall.append(time.perf_counter() - w0)
        self.cpu.append(time.process_time() - c0)
        return result


async def run_to_end(engine: PipelineEngine, template: Any) -> str:
    """Start a run (its rows are written) and wait until its driver has stored its end."""
    run_id = await engine.start_run(WS, template)
    assert run_id is not None
    await engine.wait(run_id)
    return run_id


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


def row(shape: str, engine: str, steps: int, t: Timing, extra: str = "") -> None:
    best, med, cpu = min(t.wall), statistics.median(t.wall), statistics.median(t.cpu)
    print(
        f"{shape:<12} {engine:<27} {steps:>5} {best * 1000:>9.1f} {med * 1000:>9.1f} {cpu * 1000:>9.1f} "
        f"{med / steps * 1000:>8.3f} {steps / med:>8.0f}  {extra}"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--chain", type=int, default=1000)
    parser.add_argument("--fan", type=int, default=200)
    args = parser.parse_args()
    builders = langgraph_builders()
    print(
        "Runs are interleaved (Hangar, LangGraph sync, LangGraph async, repeated), so load from other processes\n"
        "falls on all of them alike. ms/step and steps/s use the median wall time; cpu is this process's CPU.\n"
    )
    print(
        f"{'shape':<12} {'engine':<27} {'steps':>5} {'best ms':>9} {'median ms':>9} {'cpu ms':>9} "
        f"{'ms/step':>8} {'steps/s':>8}"
    )
    ratios: list[str] = []
    with tempfile.TemporaryDirectory(prefix="bench-pipelines-") as tmp:
        parts = [OVERSIGHT_PART, IDENTITY_PART, PIPELINES_CLI_PART]
        async with open_context(Settings(data_dir=Path(tmp)), parts=parts) as ctx:
            await ctx.dbs.workspace(WS, create=True)
            engine = PipelineEngine.from_app(ctx, BodyRegistry(PIPELINES_CLI_PART.bodies))
            engine.store = CountingStore(ctx.dbs.workspace, ctx.dbs.writer)
            try:
                for name, raw, n in (
                    (f"chain {args.chain}", chain_template(args.chain), args.chain),
                    # LangGraph's graph has the same steps minus Hangar's trigger node (START is not a node).
                    (f"fan-out {args.fan}", fan_template(args.fan), args.fan + 1),
                ):
                    template = tpl.load(raw, engine.bodies).template
                    graph = None
                    if builders is not None:
                        graph = builders[0](n) if name.startswith("chain") else builders[1](args.fan)
                    hangar, lg_sync, lg_async = Timing(), Timing(), Timing()
                    cfg = {"recursion_limit": 100_000}

                    for _ in range(args.repeat):
                        CountingStore.commits = 0
                        run_id = await hangar.measure(run_to_end, engine, template)
                        commits = CountingStore.commits
                        snap = await engine.snapshot(WS, run_id)
                        assert snap["status"] == "completed" and all(
                            s["status"] == "completed" for s in snap["steps"].values()
                        )
                        if graph is not None:
                            await lg_sync.measure(asyncio.to_thread, graph.invoke, {"x": 0}, cfg)
                            await lg_async.measure(graph.ainvoke, {"x": 0}, cfg)
                    row(name, "hangar (SQLite, durable)", len(template.steps), hangar, f"{commits} transactions")
                    if graph is not None:
                        row(name, "langgraph sync (in memory)", n, lg_sync)
                        row(name, "langgraph async (in memory)", n, lg_async)
                        h = statistics.median(hangar.wall) / len(template.steps)
                        peer = min(statistics.median(lg_sync.wall), statistics.median(lg_async.wall)) / n
                        ratios.append(
                            f"{name}: durable Hangar per step = {h / peer:.2f}x in-memory LangGraph (faster API)"
                        )
            finally:
                await engine.aclose()
    if builders is None:
        print("\nLangGraph is not installed, so it was skipped. Install it for the comparison (benchmark only):")
        print("    .venv/bin/pip install langgraph")
        return
    print()
    for line in ratios:
        print(line)


if __name__ == "__main__":
    asyncio.run(main())
