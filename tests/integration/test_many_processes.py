"""One data directory, many processes: every decision and every read sees what another process committed.

Real processes throughout: ``hangar serve`` twice on one data directory, the ``hangar`` CLI beside them, kill -9.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from hangar.core.tables import domain_events
from tests.support.processes import cli, hangar_serve, owner_token
from tests.support.records import records, table_names
from tests.support.rpc import RpcClient, RpcError

pytestmark = pytest.mark.slow


async def test_owner_token_minted_while_the_server_runs_is_the_owner_at_once(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with hangar_serve(data) as srv:
        token = owner_token(data)  # the README's flow: the first credential, minted while the server runs
        async with RpcClient(srv.ws_url, token) as c:
            me = await c.call("users.me")
            assert me["isServerOwner"] is True
            assert await c.call("server.users")  # a server-owner op, no restart


async def test_a_change_made_through_one_server_binds_the_other_at_once(tmp_path: Path) -> None:
    data = tmp_path / "data"
    token = owner_token(data)
    with hangar_serve(data) as a, hangar_serve(data) as b:
        async with RpcClient(a.ws_url, token) as ca, RpcClient(b.ws_url, token) as cb:
            ws = (await ca.call("workspaces.create", name="shared"))["id"]
            invite = (await ca.call("members.invite", workspace_id=ws, role="admin"))["code"]
            import httpx

            paired = httpx.post(f"{a.url}/auth/pair", json={"code": invite, "deviceName": "pat"}).json()
            async with RpcClient(b.ws_url, paired["token"]) as pat:
                # Server B has never seen this member; it reads the membership committed through A.
                await pat.call("audit.list", workspace_id=ws)
                await ca.call("members.setRole", workspace_id=ws, user_id=paired["userId"], role="guest")
                with pytest.raises(RpcError) as lowered:
                    await pat.call("audit.list", workspace_id=ws)
                assert lowered.value.code == "forbidden"
                # A space renamed through B reads renamed through A (no stale copy).
                space = await ca.call("spaces.create", workspace_id=ws, title="first")
                await ca.call("spaces.get", workspace_id=ws, space_id=space["id"])
                await cb.call("spaces.rename", workspace_id=ws, space_id=space["id"], title="renamed")
                assert (await ca.call("spaces.get", workspace_id=ws, space_id=space["id"]))["title"] == "renamed"
                # Guardrails saved through B apply on A at once.
                await cb.call("guardrails.set", workspace_id=ws, readOnly=True)
                with pytest.raises(RpcError) as refused:
                    await ca.call("spaces.create", workspace_id=ws, title="nope")
                assert refused.value.code == "refused"
                # A credential revoked through B stops working on A with its next frame.
                device = next(d for d in await cb.call("devices.list") if d["current"])
                await cb.call("devices.revoke", device_id=device["id"])
                with pytest.raises((RpcError, ConnectionError)):
                    await ca.call("users.me")


async def test_events_another_process_records_reach_a_watch_within_a_second(tmp_path: Path) -> None:
    data = tmp_path / "data"
    token = owner_token(data)
    with hangar_serve(data) as srv:
        async with RpcClient(srv.ws_url, token) as c:
            ws = (await c.call("workspaces.create", name="events"))["id"]
            watch = await c.watch("events.watch", workspace_id=ws, types=["custom.bell"])
            started = time.monotonic()
            done = await asyncio.to_thread(
                cli, data, "pipeline", "emit", "custom.bell", "--workspace", ws, "--payload", '{"n": 1}'
            )
            emitted = time.monotonic()
            event = await watch.next(timeout=5)
            seen = time.monotonic()
            assert event["type"] == "custom.bell" and event["payload"] == {"n": 1}, done.stdout
            assert seen - emitted < 1.0, f"seen {seen - emitted:.3f} s after the CLI ended ({emitted - started:.1f} s)"


def _tables(data: Path, ws: str) -> set[str]:
    with records(data, ws) as conn:
        return table_names(conn)


async def test_fifty_workspaces_created_at_once_are_all_complete_after_a_restart(tmp_path: Path) -> None:
    data = tmp_path / "data"
    token = owner_token(data)
    with hangar_serve(data) as srv:
        clients = [RpcClient(srv.ws_url, token) for _ in range(10)]
        for c in clients:
            await c.__aenter__()
        try:
            replies = await asyncio.gather(
                *(clients[i % 10].request("workspaces.create", {"name": f"w{i}"}) for i in range(50))
            )
        finally:
            for c in clients:
                await c.close()
        assert [r.get("error") for r in replies if not r.get("ok")] == []
        ids = [r["result"]["id"] for r in replies]
    expected = _tables(data, ids[0])
    assert {"domain_events", "audit_log", "messages", "agent_runs", "pipeline_runs"} <= expected
    for ws in ids:
        assert _tables(data, ws) == expected
    with hangar_serve(data) as again:
        async with RpcClient(again.ws_url, token) as c:
            listed = {w["id"] for w in await c.call("workspaces.list")}
            assert listed == set(ids)
            for ws in ids:
                events = await c.call("events.list", workspace_id=ws)
                assert [e["type"] for e in events][:1] == ["identity.workspaceCreated"]


async def test_kill_during_workspace_creation_never_leaves_a_half_made_workspace(tmp_path: Path) -> None:
    data = tmp_path / "data"
    token = owner_token(data)
    for trial, delay in enumerate((0.05, 0.15, 0.3)):
        with hangar_serve(data) as srv:
            async with RpcClient(srv.ws_url, token) as c:
                sent = [
                    asyncio.create_task(c.request("workspaces.create", {"name": f"t{trial}-{i}"})) for i in range(8)
                ]
                await asyncio.sleep(delay)
                srv.kill9()
                await asyncio.gather(*sent, return_exceptions=True)
        with hangar_serve(data) as again:
            assert not list(data.glob(".creating-*")), "staging directories of dead creations are cleared at start"
            async with RpcClient(again.ws_url, token) as c:
                for w in await c.call("workspaces.list"):
                    await c.call("members.list", workspace_id=w["id"])
                    await c.call("events.list", workspace_id=w["id"])
            assert "already exists" not in again.log_text()


async def test_a_damaged_workspace_is_reported_and_the_rest_serves(tmp_path: Path) -> None:
    data = tmp_path / "data"
    token = owner_token(data)
    with hangar_serve(data) as srv:
        async with RpcClient(srv.ws_url, token) as c:
            good = (await c.call("workspaces.create", name="good"))["id"]
            bad = (await c.call("workspaces.create", name="bad"))["id"]
    # What concurrent migrations used to leave: every version table at head, tables missing.
    with records(data, bad) as conn:
        conn.execute(sa.text("DROP TABLE messages" + (" CASCADE" if conn.dialect.name == "postgresql" else "")))
    with hangar_serve(data) as srv:
        async with RpcClient(srv.ws_url, token) as c:
            await c.call("members.list", workspace_id=good)
            assert await c.call("spaces.create", workspace_id=good, title="fine")
            with pytest.raises(RpcError) as damaged:
                await c.call("spaces.list", workspace_id=bad)
            assert damaged.value.code == "unavailable" and "messages" in damaged.value.message
        assert f"workspace {bad} is unavailable" in srv.log_text()


async def test_every_message_a_killed_server_stored_has_its_event(tmp_path: Path) -> None:
    data = tmp_path / "data"
    token = owner_token(data)
    ws = space = ""
    for trial, delay in enumerate((0.2, 0.3, 0.4, 0.5, 0.6, 0.7)):
        with hangar_serve(data) as srv:
            async with RpcClient(srv.ws_url, token) as c:
                if trial == 0:
                    ws = (await c.call("workspaces.create", name="chat"))["id"]
                    space = (await c.call("spaces.create", workspace_id=ws, title="talk"))["id"]

                async def post(n: int, client: RpcClient = c, ws: str = ws, space: str = space) -> None:
                    for i in range(1000):
                        await client.request(
                            "messages.post", {"workspace_id": ws, "spaceId": space, "content": f"{n}-{i}"}
                        )

                posting = [asyncio.create_task(post(n)) for n in range(8)]
                await asyncio.sleep(delay)
                srv.kill9()
                await asyncio.gather(*posting, return_exceptions=True)
        with records(data, ws) as conn:
            stored = set(conn.execute(sa.text("SELECT id FROM messages")).scalars())
            posted = sa.select(domain_events.c.payload).where(domain_events.c.type == "workspace.messagePosted")
            announced = {payload["message"]["id"] for payload in conn.execute(posted).scalars()}
        assert stored and stored == announced, f"trial {trial}: {len(stored - announced)} messages never announced"
