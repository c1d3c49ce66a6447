"""SCIM list with a filter over 10,000 users: p50/p95 latency (target: p50 under 20 ms).

Three measurements in one run, on the same 10,000 provisioned users:
1. the query as the SCIM endpoint runs it in process (``ScimDirectory.search_json``: the filter translated to
   SQL, a count and a page, each user's JSON joined from its stored text);
2. side by side, the naive way a SCIM layer without a translator works: load every user and evaluate the same
   filter in Python (our in-memory evaluator, the one PATCH uses);
3. end to end over HTTP: ``GET /scim/v2/Users?filter=...`` against ``hangar serve`` running as its own process.

Run: .venv/bin/python bench/bench_sso_scim.py [--users 10000] [--rounds 30]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import sqlalchemy as sa

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.rpc import RpcClient  # noqa: E402

from hangar.core.clock import SystemClock  # noqa: E402
from hangar.core.datadir import DataDir  # noqa: E402
from hangar.core.db import Databases  # noqa: E402
from hangar.identity import tables as identity_tables  # noqa: E402
from hangar.identity.service import IdentityService  # noqa: E402
from hangar.sso import config as sso_config  # noqa: E402
from hangar.sso.scim.filter import parse_filter  # noqa: E402
from hangar.sso.scim.index import index_rows  # noqa: E402
from hangar.sso.scim.match import bind, fold, matches  # noqa: E402
from hangar.sso.scim.render import fixed_parts  # noqa: E402
from hangar.sso.scim.schema import ENTERPRISE_URN, user_schema  # noqa: E402
from hangar.sso.scim.store import ScimDirectory  # noqa: E402
from hangar.sso.scim.tables import scim_users, scim_values  # noqa: E402

BIN = Path(sys.executable).parent / "hangar"
BASE = "http://bench/scim/v2"
FILTERS = {
    "userName eq": 'userName eq "user5000@corp.example"',
    "emails value filter": 'emails[type eq "work" and value co "5000@"]',
    "and/or/not over JSON": 'name.familyName sw "Fam5" and (title pr or not (active eq false))',
    "enterprise attribute": f'{ENTERPRISE_URN}:department eq "dept-7"',
    "externalId eq": 'externalId eq "ext-7777"',
    "unselective value filter": 'emails[type eq "work" and primary eq true]',
    "every user (userName sw)": 'userName sw "user"',
}


async def populate(dbs: Databases, count: int) -> None:
    rng = random.Random(1)
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    users: list[dict[str, Any]] = []
    records: list[dict[str, Any]] = []
    for i in range(count):
        uid = f"00000000-0000-4000-8000-{i:012d}"
        name = f"user{i}@corp.example"
        created = t0 + timedelta(seconds=i)
        resource: dict[str, Any] = {
            "userName": name,
            "active": True,
            "name": {"givenName": f"Given{i}", "familyName": f"Fam{i}"},
            "displayName": f"User {i}",
            "emails": [
                {"value": f"user{i}@corp.example", "type": "work", "primary": True},
                {"value": f"home{i}@mail.example", "type": "home"},
            ],
            ENTERPRISE_URN: {"department": f"dept-{rng.randint(0, 99)}", "employeeNumber": str(i)},
        }
        if rng.random() < 0.3:
            resource["title"] = "Engineer"
        users.append(
            {"id": uid, "email": name, "display_name": f"User {i}", "created_at": created, "deactivated_at": None}
        )
        records.append(
            {
                "user_id": uid,
                "user_name": name,
                "user_name_lc": fold(name),
                "external_id": f"ext-{i}",
                "resource": resource,
                "created_at": created,
                "updated_at": created,
                "version": 1,
                "seq": i + 1,
                # As every write stores it (``ScimDirectory`` renders records it finds without it on first use).
                "rendered": fixed_parts(uid, name, f"ext-{i}", resource, created, created),
            }
        )
    values = [row for r in records for row in index_rows(user_schema(), r["user_id"], r["seq"], r["resource"])]
    async with dbs.server.begin() as conn:
        await conn.execute(sa.insert(identity_tables.users), users)
        await conn.execute(sa.insert(scim_users), records)
        await conn.execute(sa.insert(scim_values), values)
    # The bulk load leaves every page of the database in the write-ahead log, which each read would then look up;
    # a server provisioned over time keeps a short log (SQLite checkpoints every 1,000 pages), so start from that.
    async with dbs.server.connect() as conn:
        await conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")


async def timed(fn: Callable[[], Awaitable[Any]], rounds: int) -> tuple[float, float, Any]:
    await fn()  # warm-up
    samples, result = [], None
    for _ in range(rounds):
        start = time.perf_counter()
        result = await fn()
        samples.append((time.perf_counter() - start) * 1000)
    samples.sort()
    return statistics.median(samples), samples[int(len(samples) * 0.95) - 1], result


async def in_process(data_dir: Path, count: int, rounds: int) -> dict[str, Any]:
    dbs = Databases(DataDir(data_dir).ensure(), [identity_tables.MIGRATIONS, sso_config.MIGRATIONS])
    await dbs.open()
    await populate(dbs, count)
    clock = SystemClock()
    directory = ScimDirectory(dbs.server, IdentityService(dbs.server, clock), clock)
    figures: dict[str, Any] = {}
    for label, text in FILTERS.items():
        bound = bind(user_schema(), parse_filter(text))

        async def translated(bound: Any = bound) -> Any:
            return await directory.search_json(bound, 1, 100, BASE)

        async def naive(bound: Any = bound) -> Any:
            _, everyone = await directory.search(None, 1, count, BASE)
            hits = [r for r in everyone if matches(bound, r)]
            return len(hits), hits[:100]

        p50, p95, (total, _) = await timed(translated, rounds)
        n50, _, (n_total, _) = await timed(naive, max(3, rounds // 10))
        assert total == n_total, (label, total, n_total)
        figures[label] = {"matches": total, "sql_p50_ms": p50, "sql_p95_ms": p95, "naive_p50_ms": n50}
        print(f"  {label:24s} {total:5d} match  SQL p50 {p50:7.2f} ms  p95 {p95:7.2f} ms  |  naive p50 {n50:8.1f} ms")
    await dbs.aclose()
    return figures


async def over_http(data_dir: Path, rounds: int) -> dict[str, float]:
    owner = subprocess.run(
        [str(BIN), "admin", "owner-token", "--data-dir", str(data_dir)], capture_output=True, text=True, check=True
    ).stdout.strip()
    port = 18000 + random.randint(0, 999)
    server = subprocess.Popen(
        [str(BIN), "serve", "--no-prepare-pack", "--data-dir", str(data_dir), "--port", str(port), "--no-site"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        async with httpx.AsyncClient() as http:
            for _ in range(200):
                try:
                    if (await http.get(f"{url}/healthz")).status_code == 200:
                        break
                except httpx.TransportError:
                    await asyncio.sleep(0.1)
            async with RpcClient(f"ws://127.0.0.1:{port}/rpc", owner) as rpc:
                token = (await rpc.call("sso.scimRegenerateToken"))["token"]
            headers = {"authorization": f"Bearer {token}"}
            figures = {}
            for label in FILTERS:

                async def get(label: str = label) -> Any:
                    params = {"filter": FILTERS[label], "count": 100}
                    resp = await http.get(f"{url}/scim/v2/Users", params=params, headers=headers)
                    assert resp.status_code == 200, resp.text
                    return resp.json()["totalResults"]

                p50, p95, total = await timed(get, rounds)
                h50, _, _ = await timed(lambda: http.get(f"{url}/healthz"), rounds)
                figures[label] = p50
                line = f"  {label:24s} {total:5d} match  HTTP p50 {p50:7.2f} ms  p95 {p95:7.2f} ms"
                print(f"{line}  (healthz p50 {h50:.2f} ms)")
            return figures
    finally:
        server.terminate()
        server.wait(10)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--users", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp)
        print(f"SCIM list with a filter over {args.users} users (page of 100), in process:")
        figures = await in_process(data_dir, args.users, args.rounds)
        print("over HTTP against `hangar serve`:")
        figures["http"] = await over_http(data_dir, args.rounds)
        worst = max(f["sql_p50_ms"] for k, f in figures.items() if k != "http")
        print(f"worst in-process p50 {worst:.2f} ms (target < 20 ms)")
        print(json.dumps(figures, indent=1))


if __name__ == "__main__":
    asyncio.run(main())
