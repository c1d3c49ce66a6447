"""``audit.list`` filters (action, principal, target, door, time) and its newest-first page, and ``events.list``'s
last events, over the real socket."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.core_parts import PARTS
from tests.support.rpc import RpcClient, RpcError
from tests.support.server import RunningServer, running_server


@pytest.fixture
async def srv(tmp_path: Path):
    async with running_server(tmp_path / "data", parts=PARTS) as s:
        yield s


async def test_filters_narrow_the_rows_and_newest_comes_first(srv: RunningServer) -> None:
    wid = await srv.new_workspace("Audited")
    bob = await srv.new_user_token(wid, "member", name="bob")
    async with RpcClient(srv.ws_url, srv.owner_token) as c, RpcClient(srv.ws_url, bob) as b:
        me = await c.call("users.me")
        bob_id = (await b.call("users.me"))["id"]
        await c.call("members.invite", workspace_id=wid, role="guest")
        await c.call("members.setRole", workspace_id=wid, userId=bob_id, role="admin")
        await b.call("members.invite", workspace_id=wid)
        await c.call("guardrails.set", workspace_id=wid, readOnly=False)

        everything = await c.call("audit.list", workspace_id=wid)
        actions = [r["action"] for r in everything]
        assert actions == ["workspaces.create", "members.invite", "members.setRole", "members.invite", "guardrails.set"]

        newest = await c.call("audit.list", workspace_id=wid, newest=True, limit=2)
        assert [r["action"] for r in newest] == ["guardrails.set", "members.invite"]

        invites = await c.call("audit.list", workspace_id=wid, action="members.invite")
        assert [r["details"]["role"] for r in invites] == ["guest", "member"]

        by_bob = await c.call("audit.list", workspace_id=wid, principal=f"user:{bob_id}")
        assert [r["action"] for r in by_bob] == ["members.invite"]
        by_owner = await c.call("audit.list", workspace_id=wid, principal=f"user:{me['id']}", action="members.invite")
        assert [r["details"]["role"] for r in by_owner] == ["guest"]

        on_bob = await c.call("audit.list", workspace_id=wid, target=f"user:{bob_id}")
        assert [r["action"] for r in on_bob] == ["members.setRole"]

        # The workspace's creation was written by no caller's door; everything after came through the socket.
        socket_rows = await c.call("audit.list", workspace_id=wid, door="socket")
        assert [r["action"] for r in socket_rows] == actions[1:]
        assert [r["action"] for r in await c.call("audit.list", workspace_id=wid, door="none")] == actions[:1]
        assert await c.call("audit.list", workspace_id=wid, door="mcp") == []

        # A time window: from the role change (inclusive) to the last row (exclusive).
        since, until = everything[2]["at"], everything[4]["at"]
        window = await c.call("audit.list", workspace_id=wid, since=since, until=until)
        assert [r["action"] for r in window] == ["members.setRole", "members.invite"]


async def test_bad_filters_are_named(srv: RunningServer) -> None:
    wid = await srv.new_workspace("Audited")
    async with RpcClient(srv.ws_url, srv.owner_token) as c:
        for args, field in (
            ({"door": "window"}, "door"),
            ({"since": "2026-01-01T00:00:00"}, "since"),  # no zone: ambiguous
            ({"since": "yesterday"}, "since"),
        ):
            with pytest.raises(RpcError) as info:
                await c.call("audit.list", workspace_id=wid, **args)
            assert info.value.code == "invalid_args"
            assert field in info.value.message, info.value
        with pytest.raises(RpcError) as info:
            await c.call("audit.list", workspace_id=wid, since="2026-01-02T00:00:00Z", until="2026-01-01T00:00:00Z")
        assert info.value.code == "invalid_args"
        assert "until must be later than since" in info.value.message


async def test_events_list_gives_the_last_events_oldest_first(srv: RunningServer) -> None:
    wid = await srv.new_workspace("Eventful")
    async with RpcClient(srv.ws_url, srv.owner_token) as c:
        for n in range(3):  # each role change publishes identity.memberRoleChanged
            async with RpcClient(srv.ws_url, await srv.new_user_token(wid, "member", name=f"u{n}")) as u:
                uid = (await u.call("users.me"))["id"]
            await c.call("members.setRole", workspace_id=wid, userId=uid, role="admin")
        everything = await c.call("events.list", workspace_id=wid)
        seqs = [e["seq"] for e in everything]
        assert seqs == sorted(seqs) and len(seqs) == 4
        last_two = await c.call("events.list", workspace_id=wid, last=2)
        assert [e["seq"] for e in last_two] == seqs[-2:]
        first_two = await c.call("events.list", workspace_id=wid, limit=2)
        assert [e["seq"] for e in first_two] == seqs[:2]
        typed = await c.call("events.list", workspace_id=wid, types=["identity.workspaceCreated"], last=5)
        assert [e["type"] for e in typed] == ["identity.workspaceCreated"]
        after = await c.call("events.list", workspace_id=wid, afterSeq=seqs[-2], last=5)
        assert [e["seq"] for e in after] == seqs[-1:]


async def test_events_list_narrows_to_a_time_window(srv: RunningServer) -> None:
    wid = await srv.new_workspace("Timed")
    async with RpcClient(srv.ws_url, srv.owner_token) as c:
        for n in range(3):
            async with RpcClient(srv.ws_url, await srv.new_user_token(wid, "member", name=f"t{n}")) as u:
                uid = (await u.call("users.me"))["id"]
            await c.call("members.setRole", workspace_id=wid, userId=uid, role="admin")
        everything = await c.call("events.list", workspace_id=wid)
        assert len(everything) == 4
        # From the second event (inclusive) to the fourth (exclusive); distinct instants are needed for the cut.
        times = [e["occurredAt"] for e in everything]
        assert len(set(times)) == 4, times
        since, until = times[1], times[3]
        window = await c.call("events.list", workspace_id=wid, since=since, until=until)
        assert [e["seq"] for e in window] == [e["seq"] for e in everything[1:3]]
        last_in_window = await c.call("events.list", workspace_id=wid, since=since, until=until, last=1)
        assert [e["seq"] for e in last_in_window] == [everything[2]["seq"]]
        later = await c.call("events.list", workspace_id=wid, since=times[3])
        assert [e["seq"] for e in later] == [everything[3]["seq"]]
        assert await c.call("events.list", workspace_id=wid, until=times[0]) == []
        for args, words in (
            ({"since": "2026-01-01T00:00:00"}, "since"),
            ({"until": "soon"}, "until"),
            ({"since": "2026-01-02T00:00:00Z", "until": "2026-01-01T00:00:00Z"}, "until must be later than since"),
        ):
            with pytest.raises(RpcError) as info:
                await c.call("events.list", workspace_id=wid, **args)
            assert info.value.code == "invalid_args"
            assert words in info.value.message, info.value
