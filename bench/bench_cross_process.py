"""One data directory, many processes: how long a write made through one ``hangar serve`` takes to bind or reach
another ``hangar serve`` on the same data directory (target: under 1 s).

- a member's role changed through server B, then server A answers that member by the new role (polled);
- a message posted through server B, delivered by server A's ``events.watch``.

Run: ``.venv/bin/python bench/bench_cross_process.py``.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.processes import hangar_serve, owner_token
from tests.support.rpc import RpcClient, RpcError

TRIALS = 40


def p90(values: list[float]) -> float:
    return statistics.quantiles(values, n=10)[-1]


async def role_change(a_url: str, b_url: str, a_http: str, token: str) -> list[float]:
    seen: list[float] = []
    async with RpcClient(b_url, token) as b:
        ws = (await b.call("workspaces.create", name="bench-roles"))["id"]
        code = (await b.call("members.invite", workspace_id=ws, role="admin"))["code"]
        paired = httpx.post(f"{a_http}/auth/pair", json={"code": code, "deviceName": "pat"}).json()
        async with RpcClient(a_url, paired["token"]) as pat:
            for i in range(TRIALS):
                role = "guest" if i % 2 == 0 else "admin"
                started = time.perf_counter()
                await b.call("members.setRole", workspace_id=ws, user_id=paired["userId"], role=role)
                while True:  # an admin-only read answers by the role A reads now
                    try:
                        await pat.call("audit.list", workspace_id=ws)
                        allowed = True
                    except RpcError:
                        allowed = False
                    if allowed == (role == "admin"):
                        break
                seen.append((time.perf_counter() - started) * 1000)
    return seen


async def message_event(a_url: str, b_url: str, token: str) -> list[float]:
    seen: list[float] = []
    async with RpcClient(a_url, token) as a, RpcClient(b_url, token) as b:
        ws = (await a.call("workspaces.create", name="bench-events"))["id"]
        space = (await a.call("spaces.create", workspace_id=ws, title="s"))["id"]
        watch = await a.watch("events.watch", workspace_id=ws, types=["workspace.messagePosted"])
        for i in range(TRIALS):
            started = time.perf_counter()
            await b.call("messages.post", workspace_id=ws, space_id=space, content=f"m{i}")
            event = await watch.next(10)  # the watch carries only messagePosted: this message's event
            assert event["type"] == "workspace.messagePosted", event
            seen.append((time.perf_counter() - started) * 1000)
            await asyncio.sleep(0.05)
    return seen


async def main() -> None:
    with tempfile.TemporaryDirectory(prefix="hbx-") as root:
        data = Path(root) / "data"
        token = owner_token(data)
        with hangar_serve(data) as a, hangar_serve(data) as b:
            roles = await role_change(a.ws_url, b.ws_url, a.url, token)
            events = await message_event(a.ws_url, b.ws_url, token)
    print(f"two hangar serve processes on one data directory, {TRIALS} trials each")
    for name, values in (("role change seen", roles), ("message event delivered", events)):
        print(
            f"  {name}: p50 {statistics.median(values):.1f} ms, p90 {p90(values):.1f} ms, "
            f"max {max(values):.1f} ms (target < 1000 ms)"
        )


if __name__ == "__main__":
    asyncio.run(main())
