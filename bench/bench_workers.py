"""Pipeline steps done by ``hangar worker`` processes on PostgreSQL: steps per second with 1 and 2 workers, and
the same runs driven with no worker attached (the server runs the steps itself), in one run.

The step body does nothing (``bench.noop``, declared here with ``on_worker=True``), so the figure is the cost of
the queue: the driver's durable tick, the hand-over row, a worker's claim (``FOR UPDATE SKIP LOCKED``), the result
row, and the driver's poll reading it back. Two shapes: a fan-out of ``--fan`` parallel steps (throughput) and a
chain of ``--chain`` steps one after another (latency per step). Each worker is a process of its own running
``hangar.pipelines.worker.Worker`` with ``--concurrency`` slots; the driver is this process. The suite's throwaway
PostgreSQL cluster (fsync off) is started for the run.

    .venv/bin/python bench/bench_workers.py [--fan 400] [--chain 100] [--repeat 3] [--concurrency 64]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psycopg
from sqlalchemy.engine import make_url
from tests.support.postgres import PostgresCluster

from hangar.config import Settings
from hangar.core.context import AppContext
from hangar.identity.part import IDENTITY_PART
from hangar.oversight import OVERSIGHT_PART
from hangar.pipelines import BodyRegistry
from hangar.pipelines import template as tpl
from hangar.pipelines.bodies.spec import body
from hangar.pipelines.engine import PipelineEngine
from hangar.pipelines.part import PIPELINES_CLI_PART
from hangar.pipelines.step import StepContext
from hangar.pipelines.step_results import StepResult
from hangar.server.context_factory import open_context

WS = "bench"
CREDENTIAL_VARIABLE = "BENCH_WORKER_CREDENTIAL"
PROFILE_VARIABLE = "BENCH_WORKER_PROFILE"  # a directory: each worker process writes its cProfile stats there


@body("bench.noop", summary="Does nothing, on a worker.", on_worker=True)
async def noop(step: StepContext) -> StepResult:
    return StepResult.ok()


def registry() -> BodyRegistry:
    return BodyRegistry([*PIPELINES_CLI_PART.bodies, noop])


def fan_template(n: int) -> dict[str, Any]:
    steps: list[dict[str, Any]] = [{"id": "start", "kind": "trigger", "body": "pipeline.trigger"}]
    steps += [
        {"id": f"f{i}", "kind": "listen", "body": "bench.noop", "trigger": {"sourceStepIds": ["start"]}}
        for i in range(n)
    ]
    return {"id": f"fan{n}", "steps": steps}


def chain_template(n: int) -> dict[str, Any]:
    steps: list[dict[str, Any]] = [{"id": "start", "kind": "trigger", "body": "pipeline.trigger"}]
    for i in range(n):
        src = "start" if i == 0 else f"c{i - 1}"
        steps.append({"id": f"c{i}", "kind": "listen", "body": "bench.noop", "trigger": {"sourceStepIds": [src]}})
    return {"id": f"chain{n}", "steps": steps}


def settings(url: str, data: Path) -> Settings:
    return Settings(data_dir=data, database_url=url)  # type: ignore[arg-type]


async def worker_main(url: str, data: Path, concurrency: int) -> None:
    """One worker process: take steps until terminated."""
    from hangar.pipelines.worker import Worker
    from hangar.pipelines.workercreds import verify

    async with open_context(settings(url, data), parts=[OVERSIGHT_PART, IDENTITY_PART, PIPELINES_CLI_PART]) as ctx:
        credential = await verify(ctx.dbs.server, os.environ[CREDENTIAL_VARIABLE])
        engine = PipelineEngine.from_app(ctx, registry())
        await Worker(ctx, engine, credential, concurrency).run()


def start_workers(url: str, tmp: Path, n: int, credential: str, concurrency: int) -> list[subprocess.Popen[bytes]]:
    return [
        subprocess.Popen(
            [sys.executable, __file__, "--worker", url, str(tmp / f"w{i}"), str(concurrency)],
            env={**os.environ, CREDENTIAL_VARIABLE: credential},
        )
        for i in range(n)
    ]


def attached(url: str) -> int:
    conninfo = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(conninfo) as conn:
        row = conn.execute("SELECT count(*) FROM hangar_server.pipeline_workers").fetchone()
        conn.execute("DELETE FROM hangar_server.pipeline_step_queue")
        return int(row[0]) if row else 0


def forget_workers(url: str) -> None:
    conninfo = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(conninfo) as conn:
        conn.execute("DELETE FROM hangar_server.pipeline_workers")


async def timed_runs(engine: PipelineEngine, template: Any, repeat: int) -> list[float]:
    walls = []
    for _ in range(repeat):
        began = time.perf_counter()
        run_id = await engine.start_run(WS, template)
        assert run_id is not None
        await engine.wait(run_id)
        walls.append(time.perf_counter() - began)
        snap = await engine.snapshot(WS, run_id)
        assert snap["status"] == "completed", snap["status"]
    return walls


async def measure(ctx: AppContext, args: argparse.Namespace, label: str) -> None:
    engine = PipelineEngine.from_app(ctx, registry())
    try:
        for shape, raw, n in (
            (f"fan-out {args.fan}", fan_template(args.fan), args.fan),
            (f"chain {args.chain}", chain_template(args.chain), args.chain),
        ):
            template = tpl.load(raw, engine.bodies).template
            walls = await timed_runs(engine, template, args.repeat)
            median = statistics.median(walls)
            print(f"{shape:<14} {label:<28} {n:>5} {median * 1000:>10.0f} {n / median:>9.0f} {n / min(walls):>9.0f}")
    finally:
        await engine.aclose()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fan", type=int, default=400)
    parser.add_argument("--chain", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=64)
    args = parser.parse_args()
    from hangar.pipelines.workercreds import mint

    cluster = PostgresCluster.start()
    try:
        with cluster.database() as name, tempfile.TemporaryDirectory(prefix="bench-workers-") as raw_tmp:
            tmp, url = Path(raw_tmp), cluster.url(name)
            parts = [OVERSIGHT_PART, IDENTITY_PART, PIPELINES_CLI_PART]
            async with open_context(settings(url, tmp / "server"), parts=parts) as ctx:
                await ctx.dbs.workspace(WS, create=True)
                _, credential = await mint(ctx.dbs.server, "bench", ctx.clock.now())
                head = ("shape", "who runs the steps", "steps", "median ms", "steps/s", "best/s")
                print(f"{head[0]:<14} {head[1]:<28} {head[2]:>5} {head[3]:>10} {head[4]:>9} {head[5]:>9}")
                await measure(ctx, args, "the driver (no worker)")
                for n in (1, 2):
                    procs = start_workers(url, tmp, n, credential, args.concurrency)
                    try:
                        while attached(url) < n:
                            await asyncio.sleep(0.1)
                        await asyncio.sleep(1.5)  # the driver's cached "no worker attached" answer expires
                        await measure(ctx, args, f"{n} worker{'s' if n > 1 else ''} ({args.concurrency} at once)")
                    finally:
                        for p in procs:
                            p.terminate()
                        for p in procs:
                            p.wait(30)
                        forget_workers(url)  # terminated without their goodbye
    finally:
        cluster.stop()


def worker_process(url: str, data: Path, concurrency: int) -> None:
    """A worker until SIGTERM; under cProfile when ``PROFILE_VARIABLE`` names a directory for the stats."""
    profile_dir = os.environ.get(PROFILE_VARIABLE)
    profiler = cProfile.Profile() if profile_dir else None

    async def until_terminated() -> None:
        task = asyncio.current_task()
        assert task is not None
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
        with contextlib.suppress(asyncio.CancelledError):
            await worker_main(url, data, concurrency)

    if profiler is not None:
        profiler.enable()
    asyncio.run(until_terminated())
    if profiler is not None:
        profiler.disable()
        profiler.dump_stats(Path(profile_dir or ".") / f"worker-{os.getpid()}.prof")


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--worker":
        worker_process(sys.argv[2], Path(sys.argv[3]), int(sys.argv[4]))
    else:
        asyncio.run(main())
