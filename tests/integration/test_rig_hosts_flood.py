"""A rig host is not trusted with what it reports: a fake rig host (a WebSocket client speaking the wire, no
enclosures) places a rig and answers ``listeningPorts`` with a hundred thousand numbers, a 0 and a 70000. The real
server takes the valid ones only, at most ``MAX_LISTENING_PORTS`` of them: 16 forwarded, the rest listed once in
one ``portsNotForwarded`` audit row, no forward attempted for 0 or 70000, and the rig's mirroring goes on."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import websockets

from hangar.rigs.hosts import wire
from hangar.rigs.model import MAX_FORWARDED_PORTS, MAX_LISTENING_PORTS
from tests.integration.rigs_env import RigsEnv, rigs_server
from tests.integration.test_rig_hosts import BOUND_S, hosts_first, mint
from tests.integration.test_rigs_ops_ports import ports_when

pytestmark = [pytest.mark.packs("terminal"), pytest.mark.slow]

FLOOD = [0, 70000, *range(100_000, 0, -1)]


@contextlib.asynccontextmanager
async def fake_rig_host(env: RigsEnv, credential: Path) -> AsyncIterator[None]:
    headers = {"Authorization": f"Bearer {credential.read_text().strip()}"}
    url = env.srv.url.replace("http://", "ws://") + wire.PATH
    async with websockets.connect(url, additional_headers=headers, max_size=None) as ws:
        await ws.send(wire.dumps({"event": "hello", "memoryBudgetMb": 8192, "rigs": []}))
        assert json.loads(await ws.recv())["event"] == "welcome"

        async def answer(body: dict[str, Any]) -> dict[str, Any]:
            op = body["op"]
            if op == "listeningPorts":
                return {"ports": FLOOD}
            if op == "residentMb":
                return {"mb": 1}
            return {}

        async def serve() -> None:
            async for message in ws:
                if isinstance(message, str):
                    body = json.loads(message)
                    if "op" in body:
                        for one in wire.message_frames(wire.dumps({"re": body["id"], "ok": await answer(body)})):
                            await ws.send(one)

        async def beat() -> None:
            while True:
                await ws.send(wire.dumps({"event": "beat"}))
                await asyncio.sleep(wire.BEAT_S)

        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(serve()), group.create_task(beat())]
            try:
                yield
            finally:
                for task in tasks:
                    task.cancel()


async def test_a_rig_host_flooding_its_listening_ports_is_cut_to_valid_ports(tmp_path: Path) -> None:
    async with rigs_server(tmp_path) as env:
        hosts_first(env)
        host_id = mint(env, "flood", tmp_path / "cred")
        async with fake_rig_host(env, tmp_path / "cred"):
            hosts = env.manager.opener.hosts
            assert hosts is not None
            async with asyncio.timeout(BOUND_S):
                while not hosts.connected():
                    await asyncio.sleep(0.1)
            rig = await env.open()
            assert env.manager.live(env.ws, rig).host_id == host_id
            rows = await ports_when(env, rig, lambda rows: sum(r["forwarded"] for r in rows) == MAX_FORWARDED_PORTS)
            ports = sorted(r["guestPort"] for r in rows)
            assert ports == list(range(1, MAX_LISTENING_PORTS + 1))  # no 0, no 70000, nothing past the cap
            log = [e for e in await env.manager.store.actions(env.ws, rig) if e.verb == "portsNotForwarded"]
            assert len(log) == 1
            assert log[0].details["guestPorts"] == list(range(MAX_FORWARDED_PORTS + 1, MAX_LISTENING_PORTS + 1))
            await env.manager.poll_ports()  # the next poll: the same set, nothing new logged, mirroring goes on
            again = [e for e in await env.manager.store.actions(env.ws, rig) if e.verb == "portsNotForwarded"]
            assert len(again) == 1
            assert sum(r["forwarded"] for r in (await env.call("rig.ports", rigId=rig))["ports"]) == MAX_FORWARDED_PORTS
            await env.call("rig_close", rigId=rig)
