"""The chat bridge on PostgreSQL with one and with two server processes: handled replies per second.

The chat benchmark's inbound load (``bench/bench_chat.py``: replies in threads already bridged, each to become
exactly one prompt in the product and an agent run) over ``--workspaces`` workspaces, each with its own Slack
connection, on one PostgreSQL database (the suite's throwaway cluster), served by ``--servers`` processes. A
connection is held by one process at a time (``hangar.chat.claims``), so a second server takes load only for the
workspaces whose connections it holds: each workspace is connected through server ``i % servers``, which takes
its claim, and the emulator sends each workspace's events on that workspace's own socket.

Run: .venv/bin/python bench/bench_chat_servers.py [--workspaces 4] [--rate 100] [--seconds 5] [--threads 4]
(runs one server, then two, each on a fresh database and data directory).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from starlette.websockets import WebSocket

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_chat import ALICE, BIN, GENERAL, PROVIDER, TimedModel, TimedSlack, _Discard, cpu_seconds, until  # noqa: E402
from tests.peers.slack_emulator import APP_TOKEN, BOT_TOKEN, Envelope, running_slack  # noqa: E402
from tests.support.postgres import PostgresCluster  # noqa: E402
from tests.support.rpc import RpcClient  # noqa: E402
from tests.unit.agents.fake_openai import Reply, running_fake_openai  # noqa: E402


class RoutedSlack(TimedSlack):
    """The emulator, sending each envelope on the socket ``route`` names (one workspace's connection)."""

    def __init__(self) -> None:
        super().__init__()
        self.route: WebSocket | None = None

    async def _send(self, envelope: Envelope) -> None:
        if self.route is None:
            await super()._send(envelope)
            return
        await self.route.send_text(json.dumps(envelope.body))


def serve(data: Path, api_url: str, url: str, log: Path) -> tuple[subprocess.Popen[str], str]:
    env = {**os.environ, "HANGAR_CHATPROVIDER_API_URL": api_url}
    argv = ["serve", "--no-prepare-pack", "--no-site", "--port", "0", "--data-dir", str(data), "--database-url", url]
    proc = subprocess.Popen(
        [str(BIN), *argv],
        stdout=subprocess.PIPE, stderr=log.open("w"), text=True, env=env,
    )  # fmt: skip
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("server: "):
            return proc, line.split(": ", 1)[1].strip().replace("http://", "ws://") + "/rpc"
    raise RuntimeError(f"hangar did not start; see {log}")


async def one_run(ns: argparse.Namespace, servers: int, cluster: PostgresCluster) -> dict[str, Any]:
    slack, model = RoutedSlack(), TimedModel()
    model.requests = _Discard()
    model.headers = _Discard()
    model.default = Reply(text="ok")
    with tempfile.TemporaryDirectory() as td, cluster.database() as dbname:
        tmp, url = Path(td), cluster.url(dbname)
        data = tmp / "data"
        async with running_slack(emulator=slack), running_fake_openai(model):
            procs = [serve(data, slack.api_url, url, tmp / f"hangar-{i}.log") for i in range(servers)]
            try:
                token = subprocess.run(
                    [str(BIN), "admin", "owner-token", "--data-dir", str(data)],
                    check=True, capture_output=True, text=True,
                ).stdout.strip()  # fmt: skip
                return await load(ns, slack, model.url, [u for _, u in procs], [p.pid for p, _ in procs], token)
            finally:
                # Waited for off the event loop: a stopping server still calls the emulator served by this loop.
                for proc, _ in procs:
                    proc.terminate()
                for proc, _ in procs:
                    try:
                        await asyncio.to_thread(proc.wait, 60)
                    except subprocess.TimeoutExpired:
                        proc.kill()
                        proc.wait(30)


async def load(
    ns: argparse.Namespace, slack: RoutedSlack, model_url: str, urls: list[str], pids: list[int], token: str
) -> dict[str, Any]:
    clients = [await RpcClient(u, token).__aenter__() for u in urls]
    try:
        sockets: dict[str, WebSocket] = {}
        anchors: list[tuple[str, str]] = []  # (workspace, thread)
        for i in range(ns.workspaces):
            c = clients[i % len(clients)]
            ws = (await c.call("workspaces.create", name=f"bench-{i}"))["id"]
            adapter = {"type": "openai", "baseUrl": model_url, "model": "bench", "apiKey": "sk-bench"}
            await c.call("agents.create", workspace_id=ws, name="Ada", adapter=adapter)
            creds = {"botToken": BOT_TOKEN, "appToken": APP_TOKEN}
            await c.call("chat.connect", workspace_id=ws, provider=PROVIDER, credentials=creds)
            await slack.wait_hellos(i + 1, 60)
            sockets[ws] = slack.route = slack.links[-1]
            code = (await c.call("chat.beginUserLink", workspace_id=ws, provider=PROVIDER))["code"]
            answer = await slack.acked(await slack.slash("/hangar", f"link {code}", ALICE, GENERAL), 30)
            assert answer is not None and "Linked" in answer["text"], answer
            for t in range(ns.threads):
                anchors.append((ws, (await slack.mention(GENERAL, ALICE, f"load thread {t}")).ts))
        await until(lambda: all(a in slack.opened for _, a in anchors), 300, 0.05)
        owners: Counter[int] = Counter()
        for ws in sockets:
            status = await clients[0].call("chat.status", workspace_id=ws, provider=PROVIDER)
            owners[status["owner"]["pid"]] += 1
        watches = [await clients[0].watch("events.watch", workspace_id=ws, types=["workspace.messagePosted"])
                   for ws in sockets]  # fmt: skip
        wanted: set[str] = set()
        landed: Counter[str] = Counter()
        last = [0.0]

        async def collect(watch: Any) -> None:
            while True:
                frame = await watch.next(3600)
                chat = ((frame.get("payload") or {}).get("message") or {}).get("metadata", {}).get("chat") or {}
                if chat.get("messageId") in wanted:
                    landed[chat["messageId"]] += 1
                    last[0] = time.perf_counter()

        collectors = [asyncio.create_task(collect(w)) for w in watches]
        total = int(ns.rate * ns.seconds)
        cpu0 = [cpu_seconds(p) for p in pids]
        t0 = time.perf_counter()
        for i in range(total):
            due = t0 + i / ns.rate
            if due > time.perf_counter():
                await asyncio.sleep(due - time.perf_counter())
            ws, anchor = anchors[i % len(anchors)]
            slack.route = sockets[ws]
            wanted.add((await slack.message(GENERAL, ALICE, f"reply {i}", thread_ts=anchor)).ts)
        sent_in = time.perf_counter() - t0
        deadline = time.perf_counter() + ns.drain
        while len(landed) < total and time.perf_counter() < deadline:
            await asyncio.sleep(0.05)
        wall = time.perf_counter() - t0
        cpu = [(cpu_seconds(p) - c0) / wall for p, c0 in zip(pids, cpu0, strict=True)]
        await asyncio.sleep(1.0)  # a late duplicate would show up now
        for task in collectors:
            task.cancel()
        await asyncio.gather(*collectors, return_exceptions=True)
        span = last[0] - t0
        return {
            "total": total,
            "sent_per_s": total / sent_in,
            "handled": len(landed),
            "dupes": sum(n - 1 for n in landed.values() if n > 1),
            "handled_per_s": len(landed) / span if landed else 0.0,
            "cpu": cpu,
            "held": sorted(owners.values(), reverse=True),
        }
    finally:
        for c in clients:
            await c.__aexit__(None, None, None)


async def main(ns: argparse.Namespace) -> None:
    logging.getLogger("asyncio").setLevel(logging.ERROR)
    cluster = PostgresCluster.start()
    try:
        for servers in ns.servers:
            r = await one_run(ns, servers, cluster)
            print(
                f"{servers} server(s), {ns.workspaces} workspaces (connections held per server {r['held']}): "
                f"{r['total']} replies sent at {r['sent_per_s']:.1f}/s; handled {r['handled']} "
                f"({r['handled_per_s']:.1f}/s), duplicated {r['dupes']}; server CPU "
                + " + ".join(f"{c:.2f}" for c in r["cpu"])
                + " of a core"
            )
    finally:
        cluster.stop()
    print(f"load average (1, 5, 15 min): {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--servers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--workspaces", type=int, default=4)
    parser.add_argument("--rate", type=float, default=100)
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--threads", type=int, default=4, help="bridged threads per workspace")
    parser.add_argument("--drain", type=float, default=120, help="seconds to wait for the last prompts")
    asyncio.run(main(parser.parse_args()))
