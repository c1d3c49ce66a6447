"""Pairing, device credentials, session policy, events across restarts, secrets and audit."""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa

import hangar
from hangar.core.clock import FakeClock
from hangar.identity import IdentityService
from tests.integration.core_parts import PARTS, Noted
from tests.support.rpc import RpcClient, RpcError
from tests.support.server import running_server


async def test_pairing_on_and_off(tmp_path: Path) -> None:
    async with running_server(tmp_path, parts=PARTS) as srv, httpx.AsyncClient() as http:
        async with RpcClient(srv.ws_url, srv.owner_token) as c:
            wid = (await c.call("workspaces.create", name="P"))["id"]
            code = (await c.call("members.invite", workspace_id=wid, role="member"))["code"]
        r = await http.post(f"{srv.url}/auth/pair", json={"code": code.lower(), "deviceName": "laptop"})
        assert r.status_code == 200, r.text
        token, user_id = r.json()["token"], r.json()["userId"]
        async with RpcClient(srv.ws_url, token) as c:
            me = await c.call("users.me")
            assert me["id"] == user_id and me["workspaces"][0]["role"] == "member"
            device_code = (await c.call("devices.pairingCode"))["code"]
        again = await http.post(f"{srv.url}/auth/pair", json={"code": code, "deviceName": "x"})
        assert again.status_code == 400 and again.json()["error"]["code"] == "invalid_args"
        bad = await http.post(f"{srv.url}/auth/pair", content=b"{oops")
        assert bad.status_code == 400 and "JSON" in bad.json()["error"]["message"]
        await srv.ctx.service(IdentityService).set_pairing_enabled(False)
        off = await http.post(f"{srv.url}/auth/pair", json={"code": device_code, "deviceName": "phone"})
        assert off.status_code == 403 and off.json()["error"]["code"] == "pairing_disabled"
        await srv.ctx.service(IdentityService).set_pairing_enabled(True)
        on = await http.post(f"{srv.url}/auth/pair", json={"code": device_code, "deviceName": "phone"})
        assert on.status_code == 200 and on.json()["userId"] == user_id


async def test_revoked_credential(tmp_path: Path) -> None:
    async with running_server(tmp_path, parts=PARTS) as srv, httpx.AsyncClient() as http:
        token = await srv.new_user_token(None, name="r")
        async with RpcClient(srv.ws_url, token) as c:
            devices = await c.call("devices.list")
            assert devices[0]["current"] is True and "token" not in devices[0]
            await c.call("devices.revoke", device_id=devices[0]["id"])
            with pytest.raises((RpcError, ConnectionError)) as info:
                await c.call("users.me")
            if isinstance(info.value, RpcError):
                assert info.value.code == "unauthenticated"
        r = await http.get(f"{srv.url}/auth/me", headers={"Authorization": f"Bearer {token}"})
        assert r.status_code == 401 and r.json()["error"]["code"] == "unauthenticated"


async def test_auth_me_names_whose_credential_it_is(tmp_path: Path) -> None:
    """What the web client shows before it takes a credential from a link: the account's name and email."""
    async with running_server(tmp_path, parts=PARTS) as srv, httpx.AsyncClient() as http:
        token = await srv.new_user_token(None, name="Nadia")
        r = await http.get(f"{srv.url}/auth/me", headers={"Authorization": f"Bearer {token}"})
        assert r.status_code == 200 and r.headers["cache-control"] == "no-store"
        body = r.json()
        assert (body["displayName"], body["email"], body["isServerOwner"]) == ("Nadia", "Nadia@example.test", False)
        assert set(body) == {"userId", "deviceId", "isServerOwner", "displayName", "email"}


async def test_session_policy_expiry_with_the_injectable_clock(tmp_path: Path) -> None:
    clock = FakeClock()
    async with running_server(tmp_path, parts=PARTS, clock=clock) as srv, httpx.AsyncClient() as http:
        await srv.ctx.service(IdentityService).set_session_policy(max_age_minutes=60, idle_timeout_minutes=10)
        token = await srv.new_user_token(None, name="p")
        headers = {"Authorization": f"Bearer {token}"}
        async with RpcClient(srv.ws_url, token) as c:
            await c.call("users.me")
            clock.advance(9 * 60)
            await c.call("users.me")  # used within the idle window: still fine, and the window restarts
            clock.advance(9 * 60)
            assert (await http.get(f"{srv.url}/auth/me", headers=headers)).status_code == 200
            clock.advance(11 * 60)
            with pytest.raises(RpcError) as info:
                await c.call("users.me")
            assert info.value.code == "unauthenticated" and "idle" in info.value.message
        assert (await http.get(f"{srv.url}/auth/me", headers=headers)).status_code == 401
        fresh = await srv.new_user_token(None, name="q")
        for _ in range(7):
            clock.advance(9 * 60)
            r = await http.get(f"{srv.url}/auth/me", headers={"Authorization": f"Bearer {fresh}"})
        assert r.status_code == 401 and "maximum age" in r.json()["error"]["message"]


async def test_events_persist_across_a_restart(tmp_path: Path) -> None:
    async with running_server(tmp_path, parts=PARTS) as srv:
        wid = await srv.new_workspace()
        seen: list[int] = []

        async def on(ev) -> None:  # type: ignore[no-untyped-def]
            seen.append(ev.seq)

        srv.ctx.bus.subscribe(on, name="t", types=["test.noted"])
        first = await srv.ctx.bus.publish(Noted(workspace_id=wid, text="one"))
        second = await srv.ctx.bus.publish(Noted(workspace_id=wid, text="two"))
        await srv.ctx.bus.drain()
        assert seen == [first.seq, second.seq] and second.seq == first.seq + 1
        await srv.ctx.bus.set_cursor(wid, "consumer-a", first.seq)
    async with running_server(tmp_path, parts=PARTS) as srv:
        srv.ctx.bus.registry.register(Noted)  # as a part would, through Part.events
        cursor = await srv.ctx.bus.cursor(wid, "consumer-a")
        missed = await srv.ctx.bus.replay(wid, after_seq=cursor)
        assert [e.payload["text"] for e in missed] == ["two"]
        parsed = missed[0].parse(srv.ctx.bus.registry)
        assert isinstance(parsed, Noted) and parsed.text == "two"


async def test_audit_log_is_append_only_and_never_stores_content(tmp_path: Path) -> None:
    from hangar.core.audit import sensitive

    async with running_server(tmp_path, parts=PARTS) as srv:
        wid = await srv.new_workspace()
        audit = srv.ctx.audit
        s1 = await audit.append(
            wid, principal="user:a", action="rig.type", target="rig:1", details=sensitive("hunter2")
        )
        s2 = await audit.append(wid, principal="user:a", action="rig.type", target="rig:1", details=sensitive("x"))
        s3 = await audit.append(wid, principal="user:a", action="rig.type", target="rig:2")
        assert (s1, s2, s3) == (1, 2, 1)
        rows = await audit.entries(wid, target="rig:1")
        assert rows[0].details["length"] == 7 and "hunter2" not in str(rows[0].details)
        engine = await srv.ctx.dbs.workspace(wid)
        for stmt in ("UPDATE audit_log SET action='x'", "DELETE FROM audit_log"):
            with pytest.raises(sa.exc.DBAPIError):
                async with engine.begin() as conn:
                    await conn.execute(sa.text(stmt))
        assert [e.action for e in await audit.entries(wid)] == ["workspaces.create", *["rig.type"] * 3]


@pytest.mark.sqlite_only("checks server.db's file mode")
async def test_secrets_file_is_private_and_atomic(tmp_path: Path) -> None:
    async with running_server(tmp_path, parts=PARTS) as srv:
        secrets = srv.ctx.secrets
        secrets.set("test.key", "s3cret")
        mode = stat.S_IMODE(os.stat(secrets.path).st_mode)
        assert mode == 0o600
        assert not [p for p in secrets.path.parent.iterdir() if p.name.endswith(".tmp")]
        secrets.set("test.other", "v")
        from hangar.core.secrets import SecretsFile

        assert SecretsFile(secrets.path).get("test.key") == "s3cret"
        db_mode = stat.S_IMODE(os.stat(srv.data_dir / "server.db").st_mode)
        assert db_mode == 0o600


async def test_concurrent_clients_are_isolated(tmp_path: Path) -> None:
    async with running_server(tmp_path, parts=PARTS) as srv:

        async def one(i: int) -> str:
            async with RpcClient(srv.ws_url, srv.owner_token) as c:
                if i % 5 == 0:
                    await c.send_raw("garbage")
                return str((await c.call("server.info"))["version"])

        results = await asyncio.gather(*(one(i) for i in range(20)))
        assert set(results) == {hangar.__version__}


async def test_audit_sequences_stay_gap_free_under_concurrency(tmp_path: Path) -> None:
    async with running_server(tmp_path, parts=PARTS) as srv:
        wid = await srv.new_workspace()
        seqs = await asyncio.gather(
            *(srv.ctx.audit.append(wid, principal="p", action="a", target="t") for _ in range(50))
        )
        assert sorted(seqs) == list(range(1, 51))
        events = await asyncio.gather(*(srv.ctx.bus.publish(Noted(workspace_id=wid, text=str(i))) for i in range(20)))
        # Gap-free; which of the concurrent publishes commits first is not ordered (on PostgreSQL they wait for
        # the write lock on threads of a pool, in any order).
        first = min(e.seq for e in events)
        assert sorted(e.seq for e in events) == list(range(first, first + 20))
        replayed = await srv.ctx.bus.replay(wid, after_seq=first - 1)
        assert replayed[0].occurred_at.tzinfo is not None and len(replayed) == 20
