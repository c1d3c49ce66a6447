"""Run control across processes: how long a cancel (pipelines) or an interrupt (agent runs) takes to return the
ended run, when the run is driven by the process asked (the server itself) and when it is driven by another
process on the same data directory (a ``hangar pipeline run`` command), side by side in one run.

Each sample: a shell step sleeping 60 s (or a command agent sleeping 60 s) is running; the clock starts when
``pipelines.runs.cancel`` / ``runs.interrupt`` is sent to the server over RPC and stops when the reply (the ended
run) arrives. The cross-process path adds the driver's poll for stop requests (every ``STOP_POLL_S``) and the
requester's poll of the run's status (every ``END_POLL_S``); each request is sent at a random moment.

Run: .venv/bin/python bench/bench_pipelines_stop.py [--samples 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.rpc import RpcClient  # noqa: E402
from tests.support.server import running_server  # noqa: E402
from tests.unit.agents.support import ask_agent_template, server_parts  # noqa: E402

from hangar.core.runcontrol import END_POLL_S, STOP_POLL_S  # noqa: E402

HANGAR = str(Path(sys.executable).parent / "hangar")
AGENT = str(ROOT / "tests" / "unit" / "agents" / "scripts" / "cli_agent.py")


def shell_template(tid: str, mark: Path) -> dict[str, Any]:
    return {
        "id": tid,
        "steps": [
            {"id": "start", "kind": "trigger"},
            {
                "id": "nap",
                "kind": "listen",
                "body": "shell.run",
                "trigger": {"sourceStepIds": ["start"]},
                "config": {"script": f'echo "$HANGAR_PIPELINE_RUN_ID" > {mark}; sleep 60'},
            },
            {"id": "end", "kind": "terminal", "trigger": {"sourceStepIds": ["nap"]}},
        ],
    }


def command(tmp: Path, raw: dict[str, Any], data: Path) -> subprocess.Popen[bytes]:
    file = tmp / f"{raw['id']}.json"
    file.write_text(json.dumps(raw))
    env = {k: v for k, v in os.environ.items() if k != "HANGAR_DATA_DIR"}
    return subprocess.Popen(
        [HANGAR, "pipeline", "run", str(file), "--data-dir", str(data), "--workspace", "bench"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


async def until(cond: Any) -> Any:
    for _ in range(3000):
        got = await cond()
        if got:
            return got
        await asyncio.sleep(0.02)
    raise RuntimeError("timed out")


JITTER = random.Random(7)


async def timed(call: Any) -> tuple[float, dict[str, Any]]:
    # A random moment, so the request lands anywhere in the driver's poll period (not always at one phase).
    await asyncio.sleep(JITTER.uniform(0, 0.2))
    start = time.perf_counter()
    reply = await call
    return (time.perf_counter() - start) * 1000, reply


async def main(samples: int) -> None:
    results: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        data = tmp / "data"
        async with running_server(data, parts=server_parts()) as srv, RpcClient(srv.ws_url, srv.owner_token) as c:
            ws = (await c.call("workspaces.create", name="bench"))["id"]
            adapter = {"type": "command", "argv": [sys.executable, AGENT]}
            agent = (await c.call("agents.create", workspace_id=ws, name="Sleeper", adapter=adapter))["id"]
            space = (await c.call("spaces.create", workspace_id=ws, title="bench"))["id"]
            mark = tmp / "run_id"
            await c.call("pipelines.templates.create", workspace_id=ws, template=shell_template("here", mark))
            for _ in range(samples):
                # Pipeline run driven by the server itself.
                mark.unlink(missing_ok=True)
                run_id = (await c.call("pipelines.runs.start", workspace_id=ws, templateId="here"))["runId"]
                await until(lambda: asyncio.sleep(0, mark.exists()))
                ms, snap = await timed(c.call("pipelines.runs.cancel", workspace_id=ws, runId=run_id))
                assert snap["status"] == "cancelled", snap
                results.setdefault("pipeline cancel, run driven by the server", []).append(ms)
                # Pipeline run driven by a `hangar pipeline run` command.
                mark.unlink(missing_ok=True)
                proc = command(tmp, shell_template("there", mark), data)
                await until(lambda: asyncio.sleep(0, mark.exists() and mark.read_text().strip()))
                ms, snap = await timed(c.call("pipelines.runs.cancel", workspace_id=ws, runId=mark.read_text().strip()))
                assert snap["status"] == "cancelled", snap
                assert proc.wait(30) == 1
                results.setdefault("pipeline cancel, run driven by another process", []).append(ms)
                # Agent run driven by the server itself.
                run = await c.call("agents.run", workspace_id=ws, agent_id=agent, space_id=space, prompt="sleep")
                await asyncio.sleep(0.3)  # the agent script is sleeping
                ms, got = await timed(c.call("runs.interrupt", workspace_id=ws, runId=run["runId"]))
                assert got["outcome"] == "interrupted", got
                results.setdefault("agent interrupt, run driven by the server", []).append(ms)
                # Agent run driven by a `hangar pipeline run` command.
                seen = {r["id"] for r in (await c.call("runs.list", workspace_id=ws))["runs"]}
                proc = command(tmp, ask_agent_template("ask", agent, "sleep"), data)

                async def new_run(seen: set[str] = seen) -> str | None:
                    runs = (await c.call("runs.list", workspace_id=ws, status="running"))["runs"]
                    fresh = [r["id"] for r in runs if r["id"] not in seen]
                    return fresh[0] if fresh else None

                agent_run = await until(new_run)
                await asyncio.sleep(0.3)
                ms, got = await timed(c.call("runs.interrupt", workspace_id=ws, runId=agent_run))
                assert got["outcome"] == "interrupted", got
                assert proc.wait(30) == 1
                results.setdefault("agent interrupt, run driven by another process", []).append(ms)
    print(
        f"driver's stop-request poll {STOP_POLL_S * 1000:.0f} ms, requester's end poll {END_POLL_S * 1000:.0f} ms; "
        f"{samples} samples each, reply time in ms"
    )
    print(f"{'case':<50} {'median':>8} {'max':>8}")
    for name, values in results.items():
        print(f"{name:<50} {statistics.median(values):8.1f} {max(values):8.1f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--samples", type=int, default=5)
    asyncio.run(main(parser.parse_args().samples))
