"""The peers ``bench/bench_workers.py`` sets Hangar's workers beside: DBOS Transact (durable workflows) and LangGraph
with its PostgreSQL checkpointer, doing the same shapes on the same PostgreSQL cluster.

Each peer runs in a process of its own (``python bench/workers_peers.py dbos|langgraph URL PG_PID CHAIN FAN REPEAT``,
started by bench_workers.py) and prints one JSON line per shape: the median wall time, and the CPU seconds its own
process and the PostgreSQL cluster spent. They need the optional extra ``bench``:

    .venv/bin/pip install -e '.[bench]'

- DBOS Transact: a workflow of ``CHAIN`` steps one after another (each step's output checkpointed before the next
  begins), and a workflow enqueuing ``FAN`` steps on a queue and waiting for them all (DBOS's fan-out: each is a
  workflow of its own, taken by the queue's poller, every 10 ms here instead of its default 1 s).
- LangGraph: a graph of ``CHAIN`` nodes in a line, and one of ``FAN`` nodes all after START, run with the
  PostgreSQL checkpointer and ``durability="sync"`` (each super-step's checkpoint written before the next begins,
  as Hangar and DBOS do).
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

PEERS = ("dbos", "langgraph")
MISSING = (
    "the peers of this bench are not installed: .venv/bin/pip install -e '.[bench]' "
    "(the optional extra `bench`: dbos, langgraph, langgraph-checkpoint-postgres)"
)


def installed() -> bool:
    try:
        import dbos  # noqa: F401
        import langgraph.checkpoint.postgres  # noqa: F401
    except ImportError:
        return False
    return True


def cluster_cpu(postmaster: int) -> float:
    """CPU seconds the PostgreSQL cluster spent so far: the postmaster, its live backends, and the backends that
    ended (their time is added to the postmaster's children's)."""
    tick = 100.0  # USER_HZ on Linux
    total = 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid, ppid = int(stat.parent.name), int(fields[1])
        if pid == postmaster:
            total += sum(int(f) for f in fields[11:15]) / tick  # utime, stime, cutime, cstime
        elif ppid == postmaster:
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


def measured(shape: str, n: int, repeat: int, postmaster: int, once: Callable[[], None]) -> dict[str, Any]:
    once()  # warm: tables, prepared statements, imports
    walls, cpus, pgs = [], [], []
    for _ in range(repeat):
        cpu, pg, began = time.process_time(), cluster_cpu(postmaster), time.perf_counter()
        once()
        walls.append(time.perf_counter() - began)
        cpus.append(time.process_time() - cpu)
        pgs.append(cluster_cpu(postmaster) - pg)
    return {
        "shape": shape,
        "steps": n,
        "wall": statistics.median(walls),
        "best": min(walls),
        "cpu": statistics.median(cpus),
        "pg": statistics.median(pgs),
    }


def run_dbos(url: str, postmaster: int, chain: int, fan: int, repeat: int) -> list[dict[str, Any]]:
    from dbos import DBOS, DBOSConfig, Queue

    config: DBOSConfig = {"name": "bench", "system_database_url": url, "use_listen_notify": True}
    DBOS(config=config)
    queue: list[Queue] = []

    @DBOS.step()
    def noop(i: int) -> int:
        return i

    @DBOS.workflow()
    def a_chain(n: int) -> None:
        for i in range(n):
            noop(i)

    @DBOS.workflow()
    def a_fan(n: int) -> None:
        handles = [queue[0].enqueue(noop, i) for i in range(n)]
        for handle in handles:
            handle.get_result()

    DBOS.launch()
    queue.append(DBOS.register_queue("bench_fan", polling_interval_sec=0.01))
    try:
        return [
            measured(f"chain {chain}", chain, repeat, postmaster, lambda: a_chain(chain)),
            measured(f"fan-out {fan}", fan, repeat, postmaster, lambda: a_fan(fan)),
        ]
    finally:
        DBOS.destroy()


def run_langgraph(url: str, postmaster: int, chain: int, fan: int, repeat: int) -> list[dict[str, Any]]:
    import uuid
    from typing import TypedDict

    from langgraph.checkpoint.postgres import PostgresSaver
    from langgraph.graph import END, START, StateGraph

    class State(TypedDict, total=False):
        n: int

    def noop(state: State) -> dict[str, Any]:
        return {}

    def chain_graph(n: int) -> StateGraph[State]:
        graph = StateGraph(State)
        for i in range(n):
            graph.add_node(f"c{i}", noop)
            graph.add_edge(START if i == 0 else f"c{i - 1}", f"c{i}")
        graph.add_edge(f"c{n - 1}", END)
        return graph

    def fan_graph(n: int) -> StateGraph[State]:
        graph = StateGraph(State)
        for i in range(n):
            graph.add_node(f"f{i}", noop)
            graph.add_edge(START, f"f{i}")
            graph.add_edge(f"f{i}", END)
        return graph

    conninfo = url.replace("postgresql+psycopg://", "postgresql://", 1)
    with PostgresSaver.from_conn_string(conninfo) as saver:
        saver.setup()
        results = []
        for shape, n, built in ((f"chain {chain}", chain, chain_graph(chain)), (f"fan-out {fan}", fan, fan_graph(fan))):
            app = built.compile(checkpointer=saver)

            def once(app: Any = app, n: int = n) -> None:
                config = {"configurable": {"thread_id": str(uuid.uuid4())}, "recursion_limit": n + 10}
                app.invoke({"n": 0}, config, durability="sync")

            results.append(measured(shape, n, repeat, postmaster, once))
        return results


def main(argv: list[str]) -> None:
    if len(argv) != 6 or argv[0] not in PEERS:
        raise SystemExit("usage: workers_peers.py dbos|langgraph URL PG_PID CHAIN FAN REPEAT (run by bench_workers.py)")
    peer, url, postmaster, chain, fan, repeat = argv[0], argv[1], int(argv[2]), *map(int, argv[3:6])
    if not installed():
        raise SystemExit(MISSING)
    run = run_dbos if peer == "dbos" else run_langgraph
    for result in run(url, postmaster, chain, fan, repeat):
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
