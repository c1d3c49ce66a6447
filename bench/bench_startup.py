"""Start-up time of the ``hangar`` command: how long until ``hangar serve`` is ready (it prints ``server: <url>``,
the line tests and scripts wait for; first on a fresh data directory, then again on the same one, as a restart
finds it), and how long quick commands take from spawn to exit: ``hangar --help``,
``hangar admin owner-token`` and ``hangar pipeline show`` (the pipeline commands build the same application
context ``cancel`` and ``resume`` do).

Each sample spawns a fresh process (``python -c`` of the ``hangar`` entry point, so ``--src`` can point at
another checkout's ``src`` to compare); the server gets a fresh data directory on which ``hangar admin
owner-token`` ran first, as a first install would. Medians (and the slowest) of ``--samples`` runs.

Bytecode: by default the processes keep compiled modules in a private cache that a warm-up run fills, as an
installed Hangar does; ``--no-bytecode`` compiles every module at every start instead (what a process sees under
``PYTHONDONTWRITEBYTECODE``).

The peer, in the same run: ``--peer-src`` times another checkout's ``src`` (the code before a change) round by
round with ``--src`` (each round times every command of one checkout, then of the other), and every run also
times the bare interpreter (``python -c pass``) and an import of SQLAlchemy alone, the floor any command of this
layout pays. Targets (issue 30): ``hangar serve`` ready under 1.5 s and ``hangar admin`` commands under 0.6 s on
a warm machine; the bench says which medians miss them.

Run: .venv/bin/python bench/bench_startup.py [--samples 5] [--src path/to/src] [--peer-src path/to/src]
[--no-bytecode]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENTRY = "from hangar.cli import main; main()"
TRIVIAL = {
    "id": "trivial",
    "steps": [
        {"id": "start", "kind": "trigger"},
        {"id": "end", "kind": "terminal", "trigger": {"sourceStepIds": ["start"]}},
    ],
}


BYTECODE: Path | None = None  # the private cache of compiled modules; None: compile at every start


def hangar_env(src: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("HANGAR_DATA_DIR", "PYTHONDONTWRITEBYTECODE")}
    env["PYTHONPATH"] = str(src)
    if BYTECODE is None:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    else:
        env["PYTHONPYCACHEPREFIX"] = str(BYTECODE)
    return env


CPU: dict[str, list[float]] = {}  # CPU seconds (user + system) of each timed command, by row name


def timed_command(src: Path, *args: str, row: str | None = None) -> float:
    """Seconds from spawn to exit of one ``hangar`` command, which must succeed; its CPU seconds are kept under
    ``row`` (a figure other work on the machine moves much less than the wall clock)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", ENTRY, *args], env=hangar_env(src), capture_output=True, text=True)
    took = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if row is not None:
        cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
        CPU.setdefault(row, []).append(cpu)
    if done.returncode != 0:
        raise RuntimeError(f"hangar {' '.join(args)} exited {done.returncode}: {done.stderr[-2000:]}")
    return took


def cpu_of(pid: int) -> float:
    """CPU seconds (user + system) the running process ``pid`` has used so far (Linux's ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def serve_ready(src: Path, data: Path, row: str | None = None) -> float:
    """Seconds from spawn until ``hangar serve`` prints its ``server:`` line; the server is then stopped. Its CPU
    seconds until then are kept under ``row``."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            ENTRY,
            "serve",
            "--no-prepare-pack",
            "--port",
            "0",
            "--no-site",
            "--data-dir",
            str(data),
        ],
        env=hangar_env(src),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert proc.stdout is not None
        seen: list[str] = []
        for line in proc.stdout:
            if line.startswith("server: "):
                took = time.perf_counter() - start
                if row is not None:
                    CPU.setdefault(row, []).append(cpu_of(proc.pid))
                return took
            seen.append(line)
        raise RuntimeError(f"hangar serve ended before it was ready: {''.join(seen)[-2000:]}")
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


TARGETS = {
    "hangar admin owner-token": 0.6,
    "hangar serve --no-site: until ready": 1.5,
    "hangar serve --no-site: again": 1.5,
}


def timed_python(src: Path, code: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], env=hangar_env(src), check=True, capture_output=True)
    return time.perf_counter() - start


def main(samples: int, src: Path, bytecode: bool, peer: Path | None = None) -> None:
    global BYTECODE
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        BYTECODE = tmp / "pycache" if bytecode else None
        floor: dict[str, list[float]] = {}
        for _ in range(samples):
            floor.setdefault("python -c pass", []).append(timed_python(src, "pass"))
            floor.setdefault("python -c 'import sqlalchemy'", []).append(timed_python(src, "import sqlalchemy"))
        checkouts = {"": src} if peer is None else {"": src, " (peer)": peer}
        prepared = {tag: prepare(where, tmp / f"run{len(tag)}") for tag, where in checkouts.items()}
        results: dict[str, list[float]] = {}
        # Round by round, the checkouts one after the other: a load that changes during the run (other work on the
        # machine) weighs on both alike rather than on whichever ran last.
        for n in range(samples):
            for tag, where in checkouts.items():
                for k, v in sample_once(n, where, *prepared[tag], tag).items():
                    results.setdefault(f"{k}{tag}", []).append(v)
    cache = "compiled modules cached" if bytecode else "no bytecode cache"
    print(
        f"{samples} samples each, {cache}; seconds (spawn to exit; for serve, spawn to its `server:` line); "
        f"{os.cpu_count()} CPUs, load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after"
    )
    print(f"{'command':<48} {'median':>8} {'max':>8} {'target':>8} {'CPU s':>8}")
    below = []
    for name, values in [*floor.items(), *results.items()]:
        target = TARGETS.get(name)  # the peer's rows carry " (peer)" and have none
        mid = statistics.median(values)
        shown = f"{target:8.2f}" if target else ""
        cpu = f"{statistics.median(CPU[name]):8.2f}" if name in CPU else ""
        print(f"{name:<48} {mid:8.2f} {max(values):8.2f} {shown:>8} {cpu}")
        if target and mid > target:
            below.append(f"{name}: {mid:.2f} s (target {target} s)")
    for line in below:
        print(f"BELOW TARGET: {line}")


def prepare(src: Path, tmp: Path) -> tuple[Path, Path, str]:
    """The folders and the run the samples of the checkout at ``src`` use (under ``tmp``): a data directory with
    one finished run (its id), for the pipeline command; the bytecode cache warmed up."""
    tmp.mkdir()
    data = tmp / "data"
    template = tmp / "trivial.json"
    template.write_text(json.dumps(TRIVIAL))
    run = subprocess.run(
        [sys.executable, "-c", ENTRY, "pipeline", "run", str(template), "--data-dir", str(data), "--json"],
        env=hangar_env(src),
        capture_output=True,
        text=True,
        check=True,
    )
    # Warm-up (fills the bytecode cache with what the server and the commands import).
    serve_ready(src, tmp / "warm-up")
    return tmp, data, json.loads(run.stdout)["runId"]


def sample_once(n: int, src: Path, tmp: Path, data: Path, run_id: str, tag: str) -> dict[str, float]:
    """One timing of each command of the checkout at ``src`` (sample ``n``, its fresh data directories under
    ``tmp``)."""
    results = {
        "hangar --help": timed_command(src, "--help", row=f"hangar --help{tag}"),
        "hangar admin owner-token": timed_command(
            src, "admin", "owner-token", "--data-dir", str(data), row=f"hangar admin owner-token{tag}"
        ),
        "hangar pipeline show RUN": timed_command(
            src, "pipeline", "show", run_id, "--data-dir", str(data), row=f"hangar pipeline show RUN{tag}"
        ),
    }
    fresh = tmp / f"serve-{n}"
    timed_command(src, "admin", "owner-token", "--data-dir", str(fresh))
    ready = "hangar serve --no-site: until ready"
    results[ready] = serve_ready(src, fresh, row=f"{ready}{tag}")
    # The same data directory started again: every database at head, as a restart finds it.
    again = "hangar serve --no-site: again"
    results[again] = serve_ready(src, fresh, row=f"{again}{tag}")
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--src", type=Path, default=ROOT / "src", help="The src directory of the checkout to time.")
    parser.add_argument("--no-bytecode", action="store_true", help="Compile every module at every start.")
    parser.add_argument("--peer-src", type=Path, default=None, help="Another checkout's src, timed in the same run.")
    args = parser.parse_args()
    main(args.samples, args.src.resolve(), not args.no_bytecode, args.peer_src.resolve() if args.peer_src else None)
