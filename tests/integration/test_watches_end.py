"""Access is checked when it ends, too: open watches and terminal lanes stop when the access that opened them
ends, whichever process ends it, over real sockets."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import websockets

from hangar.core.clock import FakeClock
from hangar.identity import IdentityService
from hangar.rpc.access import AccessMonitor
from tests.integration.rigs_env import RigsEnv, rigs_server
from tests.integration.test_rigs_ops_terminal import next_text, read_until, terminal_url
from tests.support.processes import hangar_serve
from tests.support.rpc import RpcClient, Watch
from tests.support.server import RunningServer, running_server


async def ended(watch: Watch, timeout: float = 5.0) -> dict[str, Any]:
    """The watch's frames up to the one saying it ended; returns that one."""
    while True:
        frame = await watch.next(timeout)
        if frame.get("type") == "error":
            return dict(frame)


async def closed_with(client: RpcClient, timeout: float = 5.0) -> int | None:
    assert client.conn is not None
    await asyncio.wait_for(client.conn.wait_closed(), timeout)
    return client.conn.close_code


@dataclass
class Watching:
    ws: str
    user: str  # the member's user id
    token: str
    client: RpcClient  # the member's socket
    watch: Watch  # the member's events.watch
    owner: RpcClient  # the server owner's socket


@contextlib.asynccontextmanager
async def member_watching(srv: RunningServer) -> AsyncIterator[Watching]:
    """A workspace and a member of it with an open ``events.watch``."""
    ws = await srv.new_workspace("watched")
    token = await srv.new_user_token(ws, "member", name="watcher")
    principal = await srv.ctx.service(IdentityService).authenticate(token)
    async with RpcClient(srv.ws_url, token) as client, RpcClient(srv.ws_url, srv.owner_token) as owner:
        watch = await client.watch("events.watch", workspace_id=ws)
        yield Watching(ws, principal.user_id, token, client, watch, owner)


async def test_a_removed_member_stops_receiving_at_once(tmp_path: Path) -> None:
    async with running_server(tmp_path) as srv, member_watching(srv) as w:
        await w.owner.call("spaces.create", workspace_id=w.ws, title="before")
        assert (await w.watch.next())["type"] == "workspace.spaceCreated"
        await w.owner.call("members.remove", workspace_id=w.ws, user_id=w.user)
        end = await ended(w.watch)
        assert end["error"]["code"] == "forbidden" and "no longer a member" in end["error"]["message"]
        await w.owner.call("spaces.create", workspace_id=w.ws, title="after")
        await asyncio.sleep(0.5)
        with pytest.raises(TimeoutError):
            await w.watch.next(timeout=0.2)  # nothing is delivered after the watch ended
        assert (await w.client.call("users.me"))["id"] == w.user  # the socket stays: the credential works


REMOVAL_ROUNDS = 15


async def test_nothing_posted_after_a_removal_is_acknowledged_reaches_the_removed_guest(tmp_path: Path) -> None:
    """The owner removes a guest following a space and posts the moment the removal is answered, round after
    round: the guest's watch ends and never carries a message posted after the acknowledgement."""
    async with running_server(tmp_path) as srv, RpcClient(srv.ws_url, srv.owner_token) as owner:
        ws = await srv.new_workspace("watched")
        space = (await owner.call("spaces.create", workspace_id=ws, title="followed"))["id"]
        identity = srv.ctx.service(IdentityService)
        for n in range(REMOVAL_ROUNDS):
            token = await srv.new_user_token(ws, "guest", name=f"guest{n}")
            user = (await identity.authenticate(token)).user_id
            async with RpcClient(srv.ws_url, token) as guest:
                watch = await guest.watch("spaces.watch", workspace_id=ws, space_id=space)
                await owner.call("messages.post", workspace_id=ws, space_id=space, content=f"before {n}")
                seen = await watch.next()
                assert seen["type"] == "workspace.messagePosted", seen  # the guest was following
                await owner.call("members.remove", workspace_id=ws, user_id=user)
                await owner.call("messages.post", workspace_id=ws, space_id=space, content=f"after {n}")
                frames = [await watch.next()]
                while frames[-1].get("type") != "error":  # every frame up to the one saying the watch ended
                    frames.append(await watch.next())
                assert frames[-1]["error"]["code"] == "forbidden", frames[-1]
                leaked = [f for f in frames if f.get("payload", {}).get("message", {}).get("content") == f"after {n}"]
                assert leaked == [], f"round {n}: the removed guest received {leaked}"


async def test_a_role_lowered_below_the_watch_minimum_ends_it(tmp_path: Path) -> None:
    async with running_server(tmp_path) as srv, member_watching(srv) as w:
        await w.owner.call("members.setRole", workspace_id=w.ws, user_id=w.user, role="guest")
        end = await ended(w.watch)
        assert end["error"]["code"] == "forbidden" and "needs the member role" in end["error"]["message"]


@pytest.mark.parametrize("how", ["revoked", "deactivated"])
async def test_a_credential_that_is_gone_closes_the_socket_with_4401(tmp_path: Path, how: str) -> None:
    async with running_server(tmp_path) as srv, member_watching(srv) as w:
        if how == "revoked":
            async with RpcClient(srv.ws_url, w.token) as again:
                device = next(d for d in await again.call("devices.list") if d["current"])
                await again.call("devices.revoke", device_id=device["id"])
        else:
            await w.owner.call("server.deactivateUser", user_id=w.user)
        assert await closed_with(w.client) == 4401
        notice = await asyncio.wait_for(w.client.unsolicited.get(), 5)
        assert notice["error"]["code"] == "unauthenticated"


async def test_an_expired_session_closes_the_socket_with_4401(tmp_path: Path) -> None:
    clock = FakeClock()
    async with running_server(tmp_path, clock=clock) as srv, member_watching(srv) as w:
        await w.owner.call("sso.setSessionPolicy", maxAgeMinutes=60, idleTimeoutMinutes=0)
        clock.advance(61 * 60)  # no request is made: the watch alone would keep running
        assert await closed_with(w.client) == 4401


async def test_a_member_removed_through_another_server_stops_receiving(tmp_path: Path) -> None:
    data = tmp_path / "data"
    async with running_server(data) as srv, member_watching(srv) as w:
        with hangar_serve(data) as other:
            async with RpcClient(other.ws_url, srv.owner_token) as owner:
                await owner.call("members.remove", workspace_id=w.ws, user_id=w.user)
            end = await ended(w.watch)
            assert end["error"]["code"] == "forbidden"


@contextlib.asynccontextmanager
async def member_terminal(env: RigsEnv, rig: str) -> AsyncIterator[tuple[str, websockets.ClientConnection]]:
    """A member of the rig's workspace (their user id) with a live terminal open on the rig."""
    token = await env.srv.new_user_token(env.ws, "member", name="typist")
    user = (await env.srv.ctx.service(IdentityService).authenticate(token)).user_id
    async with RpcClient(env.srv.ws_url, token) as member:
        url = await terminal_url(env, rig, member)
    async with websockets.connect(url, additional_headers={"Authorization": f"Bearer {token}"}) as term:
        yield user, term


@pytest.mark.packs("terminal")
async def test_a_terminal_lane_closes_when_its_member_leaves(tmp_path: Path) -> None:
    async with rigs_server(tmp_path) as env:
        rig = await env.open()
        async with member_terminal(env, rig) as (user, term):
            await term.send(b"echo lane-$((5*5))\n")
            await read_until(term, b"lane-25")
            await env.call("members.remove", user_id=user)
            notice = await next_text(term)
            assert notice["code"] == "forbidden", json.dumps(notice)
            await asyncio.wait_for(term.wait_closed(), 10)
            assert term.close_code == 4403


@pytest.mark.packs("terminal")
async def test_a_terminal_sends_nothing_made_after_a_removal_is_acknowledged(tmp_path: Path) -> None:
    """The access monitor's polling is made too slow to matter here: what the lane checks before each send is
    what keeps output made after the removal's acknowledgement from the removed member."""
    async with rigs_server(tmp_path) as env:
        monitor = env.srv.ctx.service(AccessMonitor)
        monitor.interval = monitor.recheck_every = 3600.0
        await asyncio.sleep(0.2)  # the monitor's current pause ends; the next one is the long one
        rig = await env.open()
        async with member_terminal(env, rig) as (user, term):
            await term.send(b"rm -f /tmp/go; echo waiting-$((2*3)); until [ -e /tmp/go ]; do sleep 0.01; done; "
                            b"echo made-after-$((6*7))\n")  # fmt: skip
            await read_until(term, b"waiting-6")
            await env.call("members.remove", user_id=user)
            await env.exec(rig, "touch /tmp/go")
            seen, notice = b"", None
            while notice is None and b"made-after-42" not in seen:  # the notice, or what must never come
                frame = await asyncio.wait_for(term.recv(), 30)
                if isinstance(frame, str):
                    notice = json.loads(frame)
                else:
                    seen += frame
            assert b"made-after-42" not in seen, "output made after the removal reached the removed member"
            assert notice is not None and notice["code"] == "forbidden", notice
            await asyncio.wait_for(term.wait_closed(), 10)
            assert term.close_code == 4403
