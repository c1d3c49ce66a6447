"""Durable pipeline steps on PostgreSQL, side by side in one run on the suite's throwaway cluster (fsync off):
Hangar's server running the steps itself (no worker attached), Hangar with 1 and with 2 ``hangar worker``
processes, DBOS Transact (durable workflows) and LangGraph with its PostgreSQL checkpointer (``workers_peers.py``).

The step body does nothing (``bench.noop``, declared here with ``on_worker=True``), so the figure is the cost of
durability and of the queue: the driver's durable tick, the hand-over (one statement and a NOTIFY), a worker's
claim (``FOR UPDATE SKIP LOCKED``, woken by the NOTIFY), the result (stored with the others that end with it, in
one statement and a NOTIFY carrying it) and the driver going on. Two shapes: a chain of ``--chain`` steps one after
another (latency per step) and a fan-out of ``--fan`` parallel steps (throughput). Each worker is a process of its
own with ``--concurrency`` slots; the driver is this process; each peer runs in a process of its own on a database
of its own in the same cluster. Besides steps per second, each line gives the CPU time per step of the driving
process, of the workers and of the PostgreSQL cluster (from /proc: robust to a busy machine, unlike the wall
clock), and the end gives a model of 4 and 16 workers from them, naming the bound.

The peers need the optional extra ``bench`` (the bench refuses without it, saying so; ``--no-peers`` runs Hangar
alone):

    .venv/bin/pip install -e '.[bench]'
    .venv/bin/python bench/bench_workers.py [--chain 1000] [--fan 200] [--repeat 3] [--concurrency 64] [--no-peers]

``BENCH_WORKER_PROFILE=DIR`` runs each worker process under cProfile (CPU time) and writes its stats to DIR.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import json
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
from workers_peers import MISSING, cluster_cpu, installed

WS = "bench"
CREDENTIAL_VARIABLE = "BENCH_WORKER_CREDENTIAL"
PEER_NAMES = {"dbos": "DBOS Transact", "langgraph": "LangGraph + PostgresSaver"}
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


def process_cpu(pid: int) -> float:
    """CPU seconds process ``pid`` spent so far (user and system)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100.0  # USER_HZ


class Row:
    """One line of the table: who ran which shape, how fast, and the CPU each part spent per step."""

    def __init__(
        self,
        system: str,
        shape: str,
        n: int,
        workers: int,
        wall: float,
        best: float,
        cpu: float,
        wcpu: float,
        pg: float,
    ) -> None:
        self.system, self.shape, self.n, self.workers = system, shape, n, workers
        self.wall, self.best, self.cpu, self.wcpu, self.pg = wall, best, cpu, wcpu, pg

    def line(self) -> str:
        per_worker = self.n / self.wall / max(self.workers, 1)
        ms = 1000 / self.n
        return (
            f"{self.system:<26} {self.shape:<13} {self.wall * 1000:>9.0f} {self.n / self.wall:>8.0f} "
            f"{self.n / self.best:>8.0f} {per_worker:>9.0f} {self.cpu * ms:>8.2f} {self.wcpu * ms:>8.2f} "
            f"{self.pg * ms:>8.2f}"
        )


HEAD = (
    f"{'system':<26} {'shape':<13} {'median ms':>9} {'steps/s':>8} {'best/s':>8} {'per worker':>9} "
    f"{'drive ms':>8} {'work ms':>8} {'pg ms':>8}"
)
LEGEND = (
    "steps/s: median run; best/s: fastest run; per worker: steps/s divided by the workers (1 for a peer, which runs "
    "its steps in its own process); CPU per step in ms: drive = the driving process (Hangar's server, the peer's "
    "process), work = the worker processes, pg = the PostgreSQL cluster."
)


async def timed_runs(engine: PipelineEngine, template: Any, repeat: int, postmaster: int, workers: list[int]) -> Row:
    walls, cpus, wcpus, pgs = [], [], [], []
    for i in range(repeat + 1):  # the first run warms (templates, prepared statements, the workers' caches)
        cpu, pg = time.process_time(), cluster_cpu(postmaster)
        wcpu = sum(process_cpu(p) for p in workers)
        began = time.perf_counter()
        run_id = await engine.start_run(WS, template)
        assert run_id is not None
        await engine.wait(run_id)
        wall = time.perf_counter() - began
        snap = await engine.snapshot(WS, run_id)
        assert snap["status"] == "completed", snap["status"]
        if i:
            walls.append(wall)
            cpus.append(time.process_time() - cpu)
            wcpus.append(sum(process_cpu(p) for p in workers) - wcpu)
            pgs.append(cluster_cpu(postmaster) - pg)
    med = statistics.median
    return Row("", "", 0, len(workers), med(walls), min(walls), med(cpus), med(wcpus), med(pgs))


async def measure(
    ctx: AppContext, args: argparse.Namespace, label: str, postmaster: int, workers: list[int]
) -> list[Row]:
    engine = PipelineEngine.from_app(ctx, registry())
    rows = []
    try:
        for shape, raw, n in (
            (f"chain {args.chain}", chain_template(args.chain), args.chain),
            (f"fan-out {args.fan}", fan_template(args.fan), args.fan),
        ):
            template = tpl.load(raw, engine.bodies).template
            row = await timed_runs(engine, template, args.repeat, postmaster, workers)
            row.system, row.shape, row.n = label, shape, n
            print(row.line(), flush=True)
            rows.append(row)
    finally:
        await engine.aclose()
    return rows


def peer(cluster: PostgresCluster, name: str, args: argparse.Namespace) -> list[Row]:
    """One peer, in a process of its own on a database of its own in the same cluster."""
    rows = []
    with cluster.database() as db:
        argv = [name, cluster.url(db), str(postmaster_of(cluster)), str(args.chain), str(args.fan), str(args.repeat)]
        done = subprocess.run(
            [sys.executable, str(Path(__file__).with_name("workers_peers.py")), *argv],
            capture_output=True,
            text=True,
            timeout=3600,
        )
        if done.returncode != 0:
            print(f"{name}: failed ({done.returncode}): {done.stderr.strip().splitlines()[-1:]}", flush=True)
            return rows
        for raw in done.stdout.splitlines():
            got = json.loads(raw)
            row = Row(
                PEER_NAMES[name], got["shape"], got["steps"], 0, got["wall"], got["best"], got["cpu"], 0.0, got["pg"]
            )
            print(row.line(), flush=True)
            rows.append(row)
    return rows


def postmaster_of(cluster: PostgresCluster) -> int:
    return cluster._process.pid  # the cluster's server process (its backends are its children)


def model(rows: list[Row]) -> None:
    """What 4 and 16 workers would do, from the CPU each part spends per step in the 1-worker runs."""
    cores = os.cpu_count() or 1
    print(f"\nModel (from the 1-worker runs' CPU per step; this machine has {cores} cores):")
    for row in rows:
        if row.system != "hangar, 1 worker":
            continue
        drive, work, pg = row.cpu / row.n, row.wcpu / row.n, row.pg / row.n
        bounds = {
            "the driving server (one process drives a run)": 1 / drive if drive else float("inf"),
            "PostgreSQL (its CPU, every core)": cores / pg if pg else float("inf"),
        }
        for workers in (4, 16):
            limits = {**bounds, f"{workers} workers": workers / work if work else float("inf")}
            limit = min(limits, key=lambda k: limits[k])
            print(
                f"  {row.shape:<13} {workers:>2} workers: at most {limits[limit]:>7.0f} steps/s "
                f"({limits[limit] / workers:>6.0f} per worker), bound by {limit}"
            )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fan", type=int, default=200)
    parser.add_argument("--chain", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--no-peers", action="store_true", help="Hangar only (the peers need the extra `bench`)")
    args = parser.parse_args()
    if not args.no_peers and not installed():
        raise SystemExit(MISSING)
    from hangar.pipelines.workercreds import mint

    cluster = PostgresCluster.start()
    rows: list[Row] = []
    try:
        postmaster = postmaster_of(cluster)
        print(HEAD, flush=True)
        with cluster.database() as name, tempfile.TemporaryDirectory(prefix="bench-workers-") as raw_tmp:
            tmp, url = Path(raw_tmp), cluster.url(name)
            parts = [OVERSIGHT_PART, IDENTITY_PART, PIPELINES_CLI_PART]
            async with open_context(settings(url, tmp / "server"), parts=parts) as ctx:
                await ctx.dbs.workspace(WS, create=True)
                _, credential = await mint(ctx.dbs.server, "bench", ctx.clock.now())
                rows += await measure(ctx, args, "hangar, no worker (server)", postmaster, [])
                for n in (1, 2):
                    procs = start_workers(url, tmp, n, credential, args.concurrency)
                    try:
                        while attached(url) < n:
                            await asyncio.sleep(0.1)
                        await asyncio.sleep(1.5)  # the driver's cached "no worker attached" answer expires
                        label = f"hangar, {n} worker{'s' if n > 1 else ''}"
                        rows += await measure(ctx, args, label, postmaster, [p.pid for p in procs])
                    finally:
                        for p in procs:
                            p.terminate()
                        for p in procs:
                            p.wait(30)
                        forget_workers(url)  # terminated without their goodbye
        if not args.no_peers:
            for name in PEER_NAMES:
                rows += peer(cluster, name, args)
    finally:
        cluster.stop()
    print(LEGEND)
    model(rows)


def worker_process(url: str, data: Path, concurrency: int) -> None:
    """A worker until SIGTERM; under cProfile when ``PROFILE_VARIABLE`` names a directory for the stats."""
    profile_dir = os.environ.get(PROFILE_VARIABLE)
    profiler = cProfile.Profile(time.process_time) if profile_dir else None  # CPU, not the wall (a loaded host)

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
