"""A ticket's parent never makes a loop, even when two callers race, and a loop already in the database (written
by an older server, or by hand) never hangs a walk: over real sockets against the real server."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import sqlalchemy as sa

from tests.support.rpc import RpcClient, RpcError
from tests.support.server import RunningServer, running_server

ROUNDS = 20
HANG_GUARD_S = 30.0  # a walk that loops never returns: bound the wait so the test fails instead of hanging


async def parent_chain(srv: RunningServer, ws: str, ticket_id: str) -> list[str]:
    """The ancestors of a ticket as the database holds them, stopping at the first repeat (a loop)."""
    engine = await srv.ctx.dbs.workspace(ws)
    chain: list[str] = []
    cursor: str | None = ticket_id
    query = sa.text("SELECT parent_id FROM tickets WHERE id = :id")
    async with engine.connect() as conn:
        while cursor is not None and cursor not in chain:
            chain.append(cursor)
            cursor = (await conn.execute(query, {"id": cursor})).scalar()
    if cursor is not None:
        chain.append(cursor)  # the repeat: a loop
    return chain


async def set_parent(client: RpcClient, ws: str, ticket_id: str, parent_id: str) -> str:
    try:
        await client.call("tickets.update", workspace_id=ws, ticket_id=ticket_id, parentId=parent_id)
    except RpcError as err:
        assert err.code == "invalid_args", err
        assert "own ancestor" in err.message and err.message.startswith("parentId")
        return "refused"
    return "ok"


async def test_two_callers_making_each_other_parent_never_make_a_loop(tmp_path: Path) -> None:
    async with (
        running_server(tmp_path / "data") as srv,
        RpcClient(srv.ws_url, srv.owner_token) as one,
        RpcClient(srv.ws_url, srv.owner_token) as two,
    ):
        ws = await srv.new_workspace("tickets")
        for _ in range(ROUNDS):
            a = (await one.call("tickets.create", workspace_id=ws, title="a"))["id"]
            b = (await one.call("tickets.create", workspace_id=ws, title="b"))["id"]
            outcomes = await asyncio.gather(set_parent(one, ws, a, b), set_parent(two, ws, b, a))
            # One of the two wins, the other is told why; the tree stays a tree.
            assert sorted(outcomes) == ["ok", "refused"]
            for t in (a, b):
                chain = await parent_chain(srv, ws, t)
                assert len(chain) == len(set(chain)) <= 2


async def test_a_loop_already_stored_never_hangs_a_walk(tmp_path: Path) -> None:
    async with running_server(tmp_path / "data") as srv, RpcClient(srv.ws_url, srv.owner_token) as client:
        ws = await srv.new_workspace("tickets")
        a = (await client.call("tickets.create", workspace_id=ws, title="a"))["id"]
        b = (await client.call("tickets.create", workspace_id=ws, title="b", parentId=a))["id"]
        c = (await client.call("tickets.create", workspace_id=ws, title="c"))["id"]
        engine = await srv.ctx.dbs.workspace(ws)
        async with engine.begin() as conn:  # the loop a -> b -> a, written behind the server's back
            await conn.execute(sa.text("UPDATE tickets SET parent_id = :b WHERE id = :a"), {"a": a, "b": b})

        # Moving another ticket under the loop: the walk up from the new parent ends and says what is wrong.
        with pytest.raises(RpcError) as err:
            await asyncio.wait_for(
                client.call("tickets.update", workspace_id=ws, ticket_id=c, parentId=a), HANG_GUARD_S
            )
        assert err.value.code == "conflict" and "loop" in err.value.message and err.value.message.startswith("parentId")
        assert (await client.call("tickets.get", workspace_id=ws, ticket_id=c))["parentId"] is None
        # Deleting the loop returns, and takes both of its tickets (each is the other's sub-ticket).
        deleted = await asyncio.wait_for(client.call("tickets.delete", workspace_id=ws, ticket_id=a), HANG_GUARD_S)
        assert deleted["deleted"] == 2
        left = [t["id"] for t in (await client.call("tickets.list", workspace_id=ws))["tickets"]]
        assert left == [c]
