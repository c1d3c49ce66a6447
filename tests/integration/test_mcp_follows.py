"""Following resources on the product's MCP endpoint, at its limits, with the official SDK's clients against a real
server: a session follows at most 32 resources and a listen stream names at most 32 (at the cap accepted, one past
it refused, naming the cap), and a removed member's listen stream hears nothing posted after the removal."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError

from hangar.core.principal import Role
from hangar.identity import IdentityService
from hangar.rpc.mcp.subscriptions import MAX_SUBSCRIPTIONS
from tests.support.mcp import mcp_client, mcp_session
from tests.support.rpc import RpcClient
from tests.support.server import RunningServer, running_server


@pytest.fixture
async def srv(tmp_path: Path) -> AsyncIterator[RunningServer]:
    async with running_server(tmp_path / "data") as s:
        yield s


async def space_uris(srv: RunningServer, ws: str, n: int) -> list[str]:
    async with RpcClient(srv.ws_url, srv.owner_token) as socket:
        spaces = [await socket.call("spaces.create", workspace_id=ws, title=f"S{i}") for i in range(n)]
    return [f"hangar://workspaces/{ws}/spaces/{s['id']}" for s in spaces]


@pytest.mark.filterwarnings("ignore:resources/(un)?subscribe is removed")
async def test_a_session_follows_at_most_32_resources(srv: RunningServer) -> None:
    ws = await srv.new_workspace()
    uris = await space_uris(srv, ws, MAX_SUBSCRIPTIONS + 1)
    async with mcp_session(srv, srv.owner_token) as session:
        for uri in uris[:MAX_SUBSCRIPTIONS]:
            await session.subscribe_resource(uri)  # at the cap: every one accepted
        with pytest.raises(MCPError, match=f"a session follows at most {MAX_SUBSCRIPTIONS} resources"):
            await session.subscribe_resource(uris[MAX_SUBSCRIPTIONS])  # one past it
        await session.subscribe_resource(uris[0])  # following one again takes no new place
        await session.unsubscribe_resource(uris[1])
        await session.subscribe_resource(uris[MAX_SUBSCRIPTIONS])  # a place given back is free again
        with pytest.raises(MCPError, match=f"at most {MAX_SUBSCRIPTIONS} resources"):
            await session.subscribe_resource(uris[1])


async def test_a_listen_stream_follows_at_most_32_resources(srv: RunningServer) -> None:
    ws = await srv.new_workspace()
    uris = await space_uris(srv, ws, MAX_SUBSCRIPTIONS + 1)
    async with mcp_client(srv, srv.owner_token, "2026-07-28") as client:
        with pytest.raises(MCPError, match=f"a listen stream follows at most {MAX_SUBSCRIPTIONS} resources"):
            async with client.listen(resource_subscriptions=uris):
                pass
        async with client.listen(resource_subscriptions=uris[:MAX_SUBSCRIPTIONS]) as sub:
            assert sub.honored.resource_subscriptions == uris[:MAX_SUBSCRIPTIONS]


async def collect(sub: Any, into: list[str]) -> None:
    async for event in sub:
        into.append(str(getattr(event, "uri", "")))


async def test_a_removed_members_listen_stream_ends_and_hears_nothing_more(srv: RunningServer) -> None:
    """The watch behind each followed resource checks its caller again before every event: a post made the
    moment a removal is answered reaches the removed member's stream as nothing (the session-side twin of this
    test is in ``test_mcp_product``)."""
    ws = await srv.new_workspace()
    guest = await srv.new_user_token(ws, Role.guest, name="gus")
    guest_id = (await srv.ctx.service(IdentityService).authenticate(guest)).user_id
    (uri,) = await space_uris(srv, ws, 1)
    space_id = uri.rsplit("/", 1)[1]
    heard: list[str] = []
    async with (
        RpcClient(srv.ws_url, srv.owner_token) as socket,
        mcp_client(srv, guest, "2026-07-28") as client,
        client.listen(resource_subscriptions=[uri]) as sub,
    ):
        listening = asyncio.ensure_future(collect(sub, heard))
        try:
            await socket.call("messages.post", workspace_id=ws, space_id=space_id, content="before")
            for _ in range(200):
                if heard:
                    break
                await asyncio.sleep(0.05)
            assert heard == [uri]
            await asyncio.sleep(0.5)  # a post is a few events: let the last of them arrive
            seen = len(heard)
            await socket.call("members.remove", workspace_id=ws, user_id=guest_id)
            for n in range(3):
                await socket.call("messages.post", workspace_id=ws, space_id=space_id, content=f"after {n}")
            await asyncio.sleep(1.5)  # a wait, not a bound: what arrives in it is what must not arrive at all
            assert len(heard) == seen, "the removed member heard of posts made after the removal"
        finally:
            listening.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await listening
