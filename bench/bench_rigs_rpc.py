"""Rigs through the RPC socket: ``rig.open`` to the first ``rig.exec`` result with a warm pack, and ``rig.exec``
round trips per second, one at a time and ``IN_FLIGHT`` at once on one rig (one socket, requests pipelined),
each beside the same work done directly on the enclosure backend in this run (the peer: what the manager, the
store, the audit log and the socket add on top of the machine itself); and one at a time through a second server
on the same data directory, which relays each call to the server running the rig (``hangar.rpc.relay``).

The server runs as its own process (``hangar serve``) over a fresh data directory whose image pack is the
shared warm one (``HANGAR_TEST_PACKS``, default ``~/.cache/hangar-test/packs``; built first when missing).
Run as root: ``.venv/bin/python bench/bench_rigs_rpc.py``
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import websockets

from bench_rpc import start_server
from hangar.rigs.backends.base import RigSpec
from hangar.rigs.backends.enclosure import EnclosureBackend
from hangar.rigs.egress.allowlist import terminal_default_allowlist
from hangar.rigs.images.builder import ensure_pack

PACKS = Path(os.environ.get("HANGAR_TEST_PACKS", str(Path.home() / ".cache" / "hangar-test" / "packs")))
OPENS = 10
EXEC_SECONDS = 3.0
IN_FLIGHT = 8
TARGET_MS = 150.0


class Rpc:
    def __init__(self, conn: websockets.ClientConnection) -> None:
        self.conn = conn
        self.n = 0

    async def call(self, op: str, **args: Any) -> Any:
        self.n += 1
        await self.conn.send(json.dumps({"id": self.n, "op": op, "args": args}))
        reply = json.loads(await self.conn.recv())
        if not reply["ok"]:
            raise RuntimeError(f"{op}: {reply['error']}")
        return reply["result"]


def quiet(_text: str) -> None:
    pass


def spec_like_the_manager(work: Path, rig_id: str) -> RigSpec:
    """The spec the manager would hand the backend: the terminal's default allowlist and a fresh home."""
    home = work / "direct" / "homes" / rig_id
    home.mkdir(parents=True)
    return RigSpec(rig_id, "bench", "terminal", 512, 2, terminal_default_allowlist(), home, None)


async def in_flight_direct(rig: Any) -> float:
    """``rig.exec`` of ``true`` by ``IN_FLIGHT`` callers at once for ``EXEC_SECONDS``: round trips a second."""
    count, began = 0, time.perf_counter()

    async def caller() -> None:
        nonlocal count
        while time.perf_counter() - began < EXEC_SECONDS:
            await rig.exec("true", timeout_s=30)
            count += 1

    await asyncio.gather(*(caller() for _ in range(IN_FLIGHT)))
    return count / (time.perf_counter() - began)


async def in_flight_rpc(conn: websockets.ClientConnection, ws: str, rig: str) -> float:
    """The same over one socket: ``IN_FLIGHT`` requests outstanding, a new one sent as each reply comes."""
    sent = answered = 0

    async def send() -> None:
        nonlocal sent
        sent += 1
        args = {"workspace_id": ws, "rigId": rig, "command": "true"}
        await conn.send(json.dumps({"id": f"f{sent}", "op": "rig.exec", "args": args}))

    began = time.perf_counter()
    for _ in range(IN_FLIGHT):
        await send()
    while answered < sent:
        reply = json.loads(await conn.recv())
        if not reply.get("ok"):
            raise RuntimeError(f"rig.exec: {reply.get('error')}")
        answered += 1
        if time.perf_counter() - began < EXEC_SECONDS:
            await send()
    return answered / (time.perf_counter() - began)


async def direct(work: Path) -> tuple[list[float], float, float]:
    backend = EnclosureBackend(work / "direct" / "rigs", packs_root=PACKS)
    starts: list[float] = []
    for i in range(OPENS):
        spec = spec_like_the_manager(work, f"d{i}")
        started = time.perf_counter()
        rig = await backend.start(spec, quiet)
        await rig.exec("echo ready", timeout_s=30)
        starts.append((time.perf_counter() - started) * 1000)
        await rig.aclose()
    rig = await backend.start(spec_like_the_manager(work, "dx"), quiet)
    count, began = 0, time.perf_counter()
    while time.perf_counter() - began < EXEC_SECONDS:
        await rig.exec("true", timeout_s=30)
        count += 1
    rate = count / (time.perf_counter() - began)
    many = await in_flight_direct(rig)
    await rig.aclose()
    return starts, rate, many


async def sequential_execs(rpc: Rpc, ws: str, rig: str) -> float:
    """``rig.exec`` of ``true`` one after another for ``EXEC_SECONDS``: round trips a second."""
    count, began = 0, time.perf_counter()
    while time.perf_counter() - began < EXEC_SECONDS:
        await rpc.call("rig.exec", workspace_id=ws, rigId=rig, command="true")
        count += 1
    return count / (time.perf_counter() - began)


async def through_rpc(url: str, token: str, other: str) -> tuple[list[float], float, float, float]:
    async with websockets.connect(url, additional_headers={"Authorization": f"Bearer {token}"}) as conn:
        rpc = Rpc(conn)
        ws = (await rpc.call("workspaces.create", name="bench"))["id"]
        starts: list[float] = []
        for i in range(OPENS):
            try:
                space = (await rpc.call("spaces.create", workspace_id=ws, title=f"bench {i}"))["id"]
            except RuntimeError:
                space = f"bench-space-{i}"  # a server without the workspace part takes any space id
            started = time.perf_counter()
            rig = (await rpc.call("rig.open", workspace_id=ws, space_id=space, surface="terminal"))["rigId"]
            out = await rpc.call("rig.exec", workspace_id=ws, rigId=rig, command="echo ready")
            starts.append((time.perf_counter() - started) * 1000)
            assert out["stdout"] == "ready\n", out
            if i < OPENS - 1:
                await rpc.call("rig_close", workspace_id=ws, rigId=rig)
        rate = await sequential_execs(rpc, ws, rig)
        many = await in_flight_rpc(conn, ws, rig)
        async with websockets.connect(other, additional_headers={"Authorization": f"Bearer {token}"}) as second:
            relayed = await sequential_execs(Rpc(second), ws, rig)
        await rpc.call("rig_close", workspace_id=ws, rigId=rig)
    return starts, rate, many, relayed


async def main() -> None:
    reason = EnclosureBackend(PACKS.parent / "probe", packs_root=PACKS).unavailable_reason()
    if reason:
        sys.exit(f"cannot run: {reason}")
    await ensure_pack(PACKS, lambda text: print(text, file=sys.stderr))
    with tempfile.TemporaryDirectory(prefix="hbr-", dir="/tmp") as tmp:
        work = Path(tmp)
        data = work / "data"
        (data / "rigs").mkdir(parents=True)
        (data / "rigs" / "microvm-packs").symlink_to(PACKS)  # the warm pack, shared read-only
        proc, url, token = start_server(data)
        other, other_url, _ = start_server(data)  # a second server on the same records
        try:
            rpc_starts, rpc_rate, rpc_many, relayed_rate = await through_rpc(url, token, other_url)
        finally:
            for running in (proc, other):
                running.terminate()
                running.wait(30)
        direct_starts, direct_rate, direct_many = await direct(work)

    def med(xs: list[float]) -> float:
        return statistics.median(xs)

    print(f"rig.open -> first rig.exec over RPC (warm pack): median {med(rpc_starts):.0f} ms over {OPENS} rigs")
    added, ratio = med(rpc_starts) - med(direct_starts), med(rpc_starts) / med(direct_starts)
    print(f"  peer: backend start -> first exec, no RPC: median {med(direct_starts):.0f} ms")
    print(f"  (the manager, store, audit and socket add {added:.0f} ms, ratio {ratio:.2f})")
    print(f"  versus the {TARGET_MS:.0f} ms target: {med(rpc_starts) / TARGET_MS:.2f}x")
    print(f"rig.exec round trips over RPC: {rpc_rate:.0f}/s")
    print(f"  peer: the backend's exec channel directly: {direct_rate:.0f}/s (ratio {rpc_rate / direct_rate:.2f})")
    relay_ratio = relayed_rate / rpc_rate
    print(f"rig.exec round trips through a second server, relayed: {relayed_rate:.0f}/s (ratio {relay_ratio:.2f})")
    print(f"rig.exec round trips over RPC, {IN_FLIGHT} in flight on one rig: {rpc_many:.0f}/s (target 1,000/s)")
    ratio_many = rpc_many / direct_many
    print(f"  peer: {IN_FLIGHT} callers on the backend's exec channel: {direct_many:.0f}/s (ratio {ratio_many:.2f})")


if __name__ == "__main__":
    asyncio.run(main())
