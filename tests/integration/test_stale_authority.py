"""A role read from the database is kept only while the authority counter stays where it was when the read began.
Over the real socket of a real server: a member's role is read for one request, and before that read returns, an
owner lowers the member's role and the server reads the moved counter for another request. The role read before
the change must not be kept as current: the member's next admin-only call is refused."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from hangar.core.principal import Role
from hangar.core.stamps import StampedCache
from tests.support.rpc import RpcClient, RpcError
from tests.support.server import RunningServer, running_server


@pytest.fixture
async def srv(tmp_path: Path) -> AsyncIterator[RunningServer]:
    async with running_server(tmp_path / "data") as s:
        yield s


class PausedLoad:
    """Holds the next load of ``key`` (through any ``StampedCache`` of the server, which runs in this process)
    after it has read the database and before it returns, until released."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.key: tuple[Any, ...] | None = None
        self.loaded, self.release = asyncio.Event(), asyncio.Event()
        get = StampedCache.get
        paused = self

        async def held_get(
            cache: StampedCache[Any, Any], key: Any, load: Callable[[], Awaitable[Any]], *, as_of: int | None = None
        ) -> Any:
            if key != paused.key:
                return await get(cache, key, load, as_of=as_of)
            paused.key = None  # once

            async def slow_load() -> Any:
                value = await load()
                paused.loaded.set()
                await paused.release.wait()
                return value

            return await get(cache, key, slow_load, as_of=as_of)

        monkeypatch.setattr(StampedCache, "get", held_get)


async def test_a_role_loaded_while_it_changed_is_not_kept(srv: RunningServer, monkeypatch: pytest.MonkeyPatch) -> None:
    paused = PausedLoad(monkeypatch)
    ws = await srv.new_workspace("roles")
    admin = await srv.new_user_token(ws, Role.admin, name="ada")
    other = await srv.new_user_token(ws, Role.member, name="bob")
    async with RpcClient(srv.ws_url, admin) as a, RpcClient(srv.ws_url, srv.owner_token) as owner:
        ada = (await a.call("users.me"))["id"]
        async with RpcClient(srv.ws_url, other) as b:
            bob = (await b.call("users.me"))["id"]
        await a.call("members.invite", workspace_id=ws, role="member")  # an admin's call, while she is one
        # Another change, so that her role is read again (and held) for her next call.
        await owner.call("members.setRole", workspace_id=ws, user_id=bob, role="guest")
        paused.key = ("role", ws, ada)
        reading = asyncio.create_task(a.call("members.list", workspace_id=ws))
        await asyncio.wait_for(paused.loaded.wait(), 30)  # her role (admin) is read, not yet returned
        await owner.call("members.setRole", workspace_id=ws, user_id=ada, role="member")
        await owner.call("members.list", workspace_id=ws)  # the server reads the moved counter
        paused.release.set()
        await reading  # begun before the change: answered
        with pytest.raises(RpcError) as refused:
            await a.call("members.invite", workspace_id=ws, role="member")
        assert refused.value.code == "forbidden", refused.value.message
        roles = {m["userId"]: m["role"] for m in await owner.call("members.list", workspace_id=ws)}
        assert roles[ada] == "member"
