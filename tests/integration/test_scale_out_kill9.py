"""Scale-out end to end: three servers, three workers and a rig host on one PostgreSQL database, behind a load
balancer, with kill -9 of a worker mid-step, of the server driving a pipeline run while people keep writing, and of
the rig host.

What must hold: no acknowledged write is lost; no step runs twice to completion (the killed worker's step is
finished by another worker, which sees the earlier try; the killed server's run is taken over by another server);
every client whose server died reconnects through the balancer to another server and carries on; a follower of a
space that lost its server resumes from the last event it saw on another server, missing and repeating nothing; a
rig placed on the rig host (dialling every server) runs commands through a server, and fails with an event when
the rig host is killed.

Real processes throughout (``hangar serve`` x3, ``hangar worker`` x3, ``hangar rig-host``, each on a data directory
of its own as on separate hosts) on the suite's throwaway cluster; real RPC clients; kill -9 of whole process groups.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import websockets

from tests.integration.rigs_enclosure_env import PACKS
from tests.integration.test_servers_on_one_postgresql import finished
from tests.integration.test_workers import fan_out, hangar_worker, kill9, mint, sql, start, wait_for, workers_attached
from tests.support.balancer import Balancer
from tests.support.disks import detach_disks
from tests.support.processes import HANGAR, ServeProcess, cli, hangar_serve, owner_token, stop
from tests.support.records import share_secret_key
from tests.support.rpc import RpcClient
from tests.support.runs import assert_completed

pytestmark = [pytest.mark.slow, pytest.mark.packs("terminal")]

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


@contextlib.contextmanager
def rig_host(servers: list[ServeProcess], credential: Path, log: Path) -> Iterator[subprocess.Popen[str]]:
    """``hangar rig-host`` dialling every server (a rig belongs to the server that placed it), on a data directory
    of its own under /tmp (the rigs' socket paths must stay short)."""
    dial = [arg for s in servers for arg in ("--server", s.url)]
    with tempfile.TemporaryDirectory(prefix="hh-", dir="/tmp") as data, open(log, "w") as out:
        proc = subprocess.Popen(
            [HANGAR, "rig-host", *dial, "--credential-file", str(credential), "--data-dir", data],
            env={**os.environ, "HANGAR_RIG_PACKS_DIR": str(PACKS)},
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        try:
            yield proc
        finally:
            stop(proc)
            detach_disks(Path(data))  # a rig host killed -9 leaves its rigs' disks mounted


async def rig_on_the_host(c: RpcClient, ws: str, space: str, pg_url: str, host_id: str) -> str:
    """Open a terminal rig through ``c``'s server once the rig host is connected to it, and check it was placed
    on the rig host (the servers put rigs on hosts first, by the setting)."""
    async with asyncio.timeout(120):
        while True:
            rig = str((await c.call("rig.open", workspace_id=ws, space_id=space, surface="terminal"))["rigId"])
            placed = sql(pg_url, "SELECT host_id FROM hangar_server.rig_placements WHERE rig_id = %s", rig)
            if placed == [(host_id,)]:
                return rig
            await c.call("rig_close", workspace_id=ws, rigId=rig)  # the host was not connected yet: placed here
            await asyncio.sleep(0.5)


async def rig_row(c: RpcClient, ws: str, rig: str) -> dict[str, Any]:
    return dict(await c.call("rig.get", workspace_id=ws, rigId=rig))


async def all_messages(c: RpcClient, ws: str, space: str) -> list[str]:
    out: list[dict[str, Any]] = []
    while page := (
        await c.call(
            "messages.list", workspace_id=ws, space_id=space, after_seq=out[-1]["seq"] if out else 0, limit=1000
        )
    )["messages"]:
        out.extend(page)
    return [m["content"] for m in out]


async def test_three_servers_three_workers_and_a_rig_host_survive_kill9_of_each_kind(
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
    cli(datas[0], "admin", "rig-host-credential", "create", "--name", "lab", "--to", str(tmp_path / "rig-cred"))
    host_id = (tmp_path / "rig-cred").read_text().strip().split("_")[1]  # hrh_<id>_<secret>
    cli(datas[0], "admin", "setting", "rigs.hostsFirst", "true")
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
        host = stack.enter_context(rig_host(servers, tmp_path / "rig-cred", tmp_path / "rh.log"))
        a = servers[0]
        async with Balancer([s.url for s in servers]) as lb:
            async with RpcClient(a.ws_url, token) as ca:
                ws = (await ca.call("workspaces.create", name="scale"))["id"]
                space = (await ca.call("spaces.create", workspace_id=ws, title="busy"))["id"]
                writers = [Writer(f"p{i}", lb.ws_url, token, ws, space) for i in range(3)]
                follower = Follower(lb.ws_url, token, ws, space)
                stop, stop_following = asyncio.Event(), asyncio.Event()
                # The balancer hands out servers in turn: the follower gets A, the writers B, C and A.
                following = asyncio.create_task(follower.run(stop_following))
                await follower.connected.wait()
                tasks = []
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
                # A rig B places on the rig host runs commands through B while A is gone.
                rig = await rig_on_the_host(cb, ws, space, pg_url, host_id)
                out = await cb.call("rig.exec", workspace_id=ws, rigId=rig, command="echo $((6*7)) $(id -un)")
                assert out["stdout"] == "42 rig\n", out
                run = await finished(cb, ws, run_id, timeout=150)
                await asyncio.sleep(1)
                stop.set()
                await asyncio.gather(*tasks)
                # The writers have stopped; what they were last acknowledged reaches the follower a moment later
                # (through another server), so it follows on until it has all of it (bounded against a loss).
                acked_now = {m for w in writers for m in w.acked}
                with contextlib.suppress(TimeoutError):  # what is still missing then is named below
                    async with asyncio.timeout(30):
                        while not acked_now <= set(follower.contents) and not following.done():
                            await asyncio.sleep(0.1)
                stop_following.set()
                await following
                stored = await all_messages(cb, ws, space)
                # The rig host killed -9: its rig fails with an event once the host's lease has passed.
                kill9(host)
                async with asyncio.timeout(90):
                    while (row := await rig_row(cb, ws, rig))["status"] != "failed":
                        await asyncio.sleep(0.5)
                closed = await cb.call("events.list", workspace_id=ws, types=["rigs.closed"])
    assert row["closeReason"] == "backendFailure", row
    assert [e["payload"]["reason"] for e in closed if e["payload"]["rigId"] == rig] == ["backendFailure"]
    assert_completed(run)
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
