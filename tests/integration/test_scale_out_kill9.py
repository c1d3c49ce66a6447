"""Scale-out end to end: three servers and three workers on one PostgreSQL database, behind a load balancer, with
kill -9 of a worker mid-step and of the server driving a pipeline run while people keep writing.

What must hold: no acknowledged write is lost; no step runs twice to completion (the killed worker's step is
finished by another worker, which sees the earlier try; the killed server's run is taken over by another server);
every client whose server died reconnects through the balancer to another server and carries on; a follower of a
space that lost its server resumes from the last event it saw on another server, missing and repeating nothing.

Real processes throughout (``hangar serve`` x3, ``hangar worker`` x3, each on a data directory of its own as on
separate hosts) on the suite's throwaway cluster; real RPC clients; kill -9 of whole process groups.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import pytest
import websockets

from tests.integration.test_servers_on_one_postgresql import finished
from tests.integration.test_workers import fan_out, hangar_worker, kill9, mint, sql, start, wait_for, workers_attached
from tests.support.balancer import Balancer
from tests.support.processes import ServeProcess, cli, hangar_serve, owner_token
from tests.support.records import share_secret_key
from tests.support.rpc import RpcClient

pytestmark = pytest.mark.slow

STEPS = 9


class Writer:
    """Posts numbered messages through the balancer, reconnecting whenever its server goes away; keeps the
    numbers the servers acknowledged."""

    def __init__(self, name: str, url: str, token: str, ws: str, space: str) -> None:
        self.name, self._url, self._token, self._ws, self._space = name, url, token, ws, space
        self.acked: list[str] = []
        self.sent = 0
        self.reconnects = 0
        self.acked_after_reconnect = 0
        self.connected = asyncio.Event()

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                async with RpcClient(self._url, self._token) as c:
                    self.connected.set()
                    while not stop.is_set():
                        self.sent += 1
                        content = f"{self.name}-{self.sent}"
                        await c.call("messages.post", workspace_id=self._ws, space_id=self._space, content=content)
                        self.acked.append(content)
                        if self.reconnects:
                            self.acked_after_reconnect += 1
                        await asyncio.sleep(0.1)
            except (ConnectionError, OSError, TimeoutError, websockets.ConnectionClosed):
                self.reconnects += 1
                await asyncio.sleep(0.2)


class Follower:
    """Follows the space through the balancer, resuming after the last event it saw when its server goes away."""

    def __init__(self, url: str, token: str, ws: str, space: str) -> None:
        self._url, self._token, self._ws, self._space = url, token, ws, space
        self.seqs: list[int] = []
        self.contents: list[str] = []
        self.resumes = 0
        self.connected = asyncio.Event()

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                async with RpcClient(self._url, self._token) as c:
                    after = {"after_seq": self.seqs[-1]} if self.seqs else {}
                    watch = await c.watch("spaces.watch", workspace_id=self._ws, space_id=self._space, **after)
                    self.connected.set()
                    while not stop.is_set() and c.close_code is None:
                        with contextlib.suppress(TimeoutError):
                            frame = await watch.next(timeout=0.5)
                            self.seqs.append(frame["seq"])
                            if frame["type"] == "workspace.messagePosted":
                                self.contents.append(frame["payload"]["message"]["content"])
            except (ConnectionError, OSError, TimeoutError, websockets.ConnectionClosed):
                pass
            if not stop.is_set():
                self.resumes += 1
                await asyncio.sleep(0.2)


async def all_messages(c: RpcClient, ws: str, space: str) -> list[str]:
    out: list[dict[str, Any]] = []
    while page := (
        await c.call(
            "messages.list", workspace_id=ws, space_id=space, after_seq=out[-1]["seq"] if out else 0, limit=1000
        )
    )["messages"]:
        out.extend(page)
    return [m["content"] for m in out]


async def test_three_servers_three_workers_survive_kill9_of_a_worker_and_of_the_driving_server(
    tmp_path: Path, pg_url: str
) -> None:
    ran = tmp_path / "ran"  # one line at each start and each end of a step's script, on any worker
    script = (
        f'echo "start $HANGAR_ATTEMPT_KEY $PWD" >> {ran}; sleep 3; echo "end $HANGAR_ATTEMPT_KEY" >> {ran}; echo ok'
    )
    datas = [tmp_path / n for n in ("a", "b", "c")]
    for data in datas:
        cli(data, "admin", "trusted-host-exec", "on", "--database-url", pg_url)
    share_secret_key(*datas)  # one installation key, copied to each host
    token = owner_token(datas[0])
    mint(datas[0], pg_url, "pool", tmp_path / "cred")
    with contextlib.ExitStack() as stack:
        servers: list[ServeProcess] = [
            stack.enter_context(hangar_serve(d, log=tmp_path / f"{d.name}.log")) for d in datas
        ]
        workers = [
            stack.enter_context(
                hangar_worker(
                    tmp_path / f"w{i}", pg_url, tmp_path / "cred", tmp_path / f"w{i}.log", "--concurrency", "2"
                )
            )
            for i in (1, 2, 3)
        ]
        workers_attached(pg_url, 3)
        a = servers[0]
        async with Balancer([s.url for s in servers]) as lb:
            async with RpcClient(a.ws_url, token) as ca:
                ws = (await ca.call("workspaces.create", name="scale"))["id"]
                space = (await ca.call("spaces.create", workspace_id=ws, title="busy"))["id"]
                writers = [Writer(f"p{i}", lb.ws_url, token, ws, space) for i in range(3)]
                follower = Follower(lb.ws_url, token, ws, space)
                stop = asyncio.Event()
                # The balancer hands out servers in turn: the follower gets A, the writers B, C and A.
                tasks = [asyncio.create_task(follower.run(stop))]
                await follower.connected.wait()
                for w in writers:
                    tasks.append(asyncio.create_task(w.run(stop)))
                    await w.connected.wait()
                run_id = await start(ca, ws, fan_out("fan", STEPS, script))  # started on A, so A drives it
                await asyncio.to_thread(
                    wait_for, lambda: ran.exists() and "/w1/" in ran.read_text(), "a step started on worker 1"
                )
                kill9(workers[0])  # mid-step: its scripts sleep 3 s
                a.kill9()
            # B or C takes the run over; the writers and the follower carry on through the balancer meanwhile.
            async with RpcClient(servers[1].ws_url, token) as cb:
                run = await finished(cb, ws, run_id, timeout=150)
                await asyncio.sleep(1)
                stop.set()
                await asyncio.gather(*tasks)
                stored = await all_messages(cb, ws, space)
    assert run["status"] == "completed", run
    lines = ran.read_text().splitlines()
    ends = sorted(line.split()[1].split("#")[0] for line in lines if line.startswith("end "))
    assert ends == sorted(f"pipeline:{run_id}/s{i}" for i in range(STEPS)), lines  # each step ran to its end once
    rerun = [line for line in lines if line.startswith("start ") and line.split()[1].endswith(".2")]
    assert rerun and all("/w1/" not in line for line in rerun), lines  # w1's steps were finished elsewhere
    history = sql(pg_url, "SELECT history FROM hangar_server.pipeline_step_queue WHERE tries = 2")
    assert history and all([t["outcome"] for t in h] == ["lapsed", "ok"] for (h,) in history), history
    # No acknowledged write lost; nothing stored that was not sent.
    acked = [m for w in writers for m in w.acked]
    assert set(acked) <= set(stored)
    assert len(stored) == len(set(stored)) and len(stored) <= sum(w.sent for w in writers)
    # The writer that was on A reconnected through the balancer and carried on; the others never lost theirs.
    assert [w.reconnects > 0 for w in writers] == [False, False, True], [vars(w) for w in writers]
    assert writers[2].acked_after_reconnect > 0
    assert follower.resumes >= 1
    # The follower saw every message once, in order, across its resumes.
    assert follower.seqs == sorted(set(follower.seqs))
    assert set(acked) <= set(follower.contents)
