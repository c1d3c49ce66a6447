"""Code intelligence: indexing throughput of the ``code.index`` body against universal-ctags on the same tree, and
``code.search`` latency over a graph of a million symbols.

Indexing: a repository holding Hangar's own source (``src/hangar``), a larger one made of ``--copies`` copies of it
under different folders, and a public one of a large project's size that needs no download: the standard library of
the Python running the bench (CPython's ``Lib``, its tests included), each committed, registered in a real server and
indexed by a pipeline run (``code.index``:
tree-sitter in confined workers, the graph written to the workspace database); the figure is lines parsed per
second of the run's wall time. The peer is ``ctags -R`` (universal-ctags, tags written to a file) over a checkout
of the same commit, timed the same way, in the same run.

Search: a million symbols of generated names (identifier words joined in snake and camel case, in 2,000 files) are
written to the graph of one repo (the trigram index kept by the same writes), then ``--queries`` searches (exact
names, prefixes and scattered-letter fuzzy queries, a third each): each over the RPC socket, and in the server's
process both by ``code.search``'s own query (``hangar.codegraph.queries.search``, with the trigram index) and by the
scan it replaced (``tests/support/codegraph_scan.py``), the answers compared; the figures are p50 and p99 of each.

Run: .venv/bin/python bench/bench_code_graph.py [--copies 4] [--no-stdlib] [--symbols 1000000] [--queries 300]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.integration.test_code_graph import commit_tree, index, register  # noqa: E402
from tests.integration.test_workspace_repos import _git  # noqa: E402
from tests.support.codegraph_scan import scan_search  # noqa: E402
from tests.support.rpc import RpcClient  # noqa: E402
from tests.support.server import RunningServer, running_server  # noqa: E402

import hangar  # noqa: E402
from hangar.codegraph.queries import search  # noqa: E402
from hangar.codegraph.store import FileGraph, replace  # noqa: E402

WORDS = (  # noqa: SIM905 - a paragraph of words reads better than 56 quoted ones
    "get set make read write parse index store user repo file tree node edge graph query rank search find load "
    "save open close start stop run step pipe body token cache limit frame event space ticket agent rig worker "
    "client server socket stream buffer chunk batch commit branch merge review score match name kind path line"
).split()


def make_tree(root: Path, copies: int) -> Path:
    """A repository of ``copies`` copies of Hangar's source, each under its own folder, committed."""
    source = Path(hangar.__file__).parent
    root.mkdir(parents=True)
    for i in range(copies):
        shutil.copytree(source, root / f"copy{i}" / "hangar", ignore=shutil.ignore_patterns("*.pyc", "__pycache__"))
    _git(root, "init", "-q", "-b", "main")
    commit_tree(root, {}, "tree")
    return root


def make_stdlib_tree(root: Path) -> Path:
    """A repository of the running Python's standard library (its ``.py`` files, tests included; no installed
    packages), committed."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    skip = shutil.ignore_patterns("site-packages", "dist-packages", "__pycache__", "*.pyc", "*.so")
    root.mkdir(parents=True)
    shutil.copytree(stdlib, root / "Lib", ignore=skip, symlinks=True)
    _git(root, "init", "-q", "-b", "main")
    commit_tree(root, {}, "stdlib")
    return root


def ctags_seconds(tree: Path, out: Path) -> float:
    began = time.perf_counter()
    subprocess.run(
        ["ctags", "-R", "--languages=Python,JavaScript,TypeScript,Go,Rust,Java,C", "--fields=+nK", "-f", str(out),
         "--exclude=.git", "."],
        cwd=tree, check=True, capture_output=True,
    )  # fmt: skip
    return time.perf_counter() - began


async def index_seconds(srv: RunningServer, c: RpcClient, ws: str, tree: Path) -> tuple[float, dict[str, Any]]:
    repo_id, clone = await register(srv, c, ws, tree)
    began = time.perf_counter()
    run = await index(c, ws, repo_id, clone)
    took = time.perf_counter() - began
    assert run["status"] == "completed", run
    return took, dict(run["state"]["code_index"])


def symbol_name(rng: random.Random) -> str:
    parts = rng.sample(WORDS, rng.randint(2, 4))
    return "_".join(parts) if rng.random() < 0.5 else parts[0] + "".join(p.title() for p in parts[1:])


async def search_latencies(
    srv: RunningServer, c: RpcClient, ws: str, symbols: int, queries: int
) -> dict[str, list[float]]:
    rng = random.Random(7)
    repo = await c.call("repos.register", workspace_id=ws, path=str(make_small(srv.data_dir.parent / "small")))
    per_file = symbols // 2000
    names: list[str] = []
    files = []
    for f in range(2000):
        rows = []
        for i in range(per_file):
            name = symbol_name(rng)
            names.append(name)
            rows.append({"name": name, "kind": "function", "container": "", "startLine": i + 1, "startCol": 0,
                         "endLine": i + 1, "endCol": 10})  # fmt: skip
        files.append(FileGraph(f"src/f{f}.py", f"{f:040x}", "python", per_file, None, rows, []))
    engine = await srv.ctx.dbs.workspace(ws)
    began = time.perf_counter()
    await replace(engine, repo["id"], "0" * 40, srv.ctx.clock.now(), files, [])
    print(f"  wrote {len(names):,} symbols in {time.perf_counter() - began:.1f} s")
    took: dict[str, dict[str, list[float]]] = {way: {"exact": [], "prefix": [], "fuzzy": []} for way in WAYS}
    differ = 0
    for i in range(queries):
        name = rng.choice(names)
        if i % 3 == 0:
            kind, q = "exact", name
        elif i % 3 == 1:
            kind, q = "prefix", name[: max(3, len(name) // 2)]
        else:
            letters = [ch for ch in name.lower() if ch.isalpha()]
            kind, q = "fuzzy", "".join(letters[:: max(1, len(letters) // 5)])[:6]
        began = time.perf_counter()
        await c.call("code.search", workspace_id=ws, query=q, limit=20, repoId=repo["id"])
        took["rpc"][kind].append(time.perf_counter() - began)
        began = time.perf_counter()
        indexed = await search(engine, q, [repo["id"]], 20)
        took["indexed"][kind].append(time.perf_counter() - began)
        began = time.perf_counter()
        scanned = await scan_search(engine, q, [repo["id"]], 20)
        took["scan"][kind].append(time.perf_counter() - began)
        differ += indexed != scanned
    print(f"  answers differing between the trigram index and the scan: {differ} of {queries}")
    return took


WAYS = {
    "rpc": "code.search over RPC (trigram index)",
    "indexed": "in process, trigram index",
    "scan": "in process, the scan it replaced",
}


def make_small(root: Path) -> Path:
    root.mkdir(parents=True)
    _git(root, "init", "-q", "-b", "main")
    commit_tree(root, {"a.py": "def a():\n    pass\n"}, "small")
    return root


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))]


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--copies", type=int, default=4)
    parser.add_argument("--symbols", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--no-stdlib", action="store_true", help="skip indexing the Python standard library")
    args = parser.parse_args()
    if shutil.which("ctags") is None:
        sys.exit("universal-ctags is not installed (make apt-bench-deps)")
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        trees = {
            "src/hangar": make_tree(base / "one", 1),
            f"{args.copies} copies": make_tree(base / "many", args.copies),
        }
        if not args.no_stdlib:
            trees["Python stdlib"] = make_stdlib_tree(base / "stdlib")
        async with running_server(base / "data") as srv:
            ws = await srv.new_workspace("bench")
            async with RpcClient(srv.ws_url, srv.owner_token) as c:
                print(f"load average at the start: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
                print("indexing (lines per second of wall time, the same tree for both)")
                for label, tree in trees.items():
                    took, found = await index_seconds(srv, c, ws, tree)
                    peer = ctags_seconds(tree, base / "tags")
                    lines = found["linesParsed"]
                    print(
                        f"  {label:>12}: {found['filesParsed']:,} files, {lines:,} lines, {found['symbolsFound']:,} "
                        f"symbols, {found['edgesFound']:,} edges | code.index {took:.1f} s = {lines / took:,.0f} "
                        f"lines/s | ctags {peer:.2f} s = {lines / peer:,.0f} lines/s | "
                        f"ctags is {took / peer:.1f}x faster"
                    )
                print(f"search over {args.symbols:,} symbols ({args.queries} queries: exact, prefix, fuzzy)")
                by_way = await search_latencies(srv, c, ws, args.symbols, args.queries)
                for way, by_kind in by_way.items():
                    print(f"  {WAYS[way]}:")
                    for kind, took in [*by_kind.items(), ("all", [t for ts in by_kind.values() for t in ts])]:
                        print(
                            f"    {kind:>6}: p50 {pct(took, 0.5) * 1000:.1f} ms, p99 {pct(took, 0.99) * 1000:.1f} ms, "
                            f"mean {statistics.mean(took) * 1000:.1f} ms"
                        )
        print(f"load average at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    asyncio.run(main())
