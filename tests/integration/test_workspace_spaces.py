"""Spaces and messages over the RPC socket, including the live watch and its replay."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.rpc import RpcError
from tests.unit.agents.support import workspace_server


async def test_space_lifecycle(tmp_path: Path) -> None:
    async with workspace_server(tmp_path) as (_srv, client, ws):
        a = await client.call("spaces.create", workspace_id=ws, title="  Launch plan  ", mode="plan")
        b = await client.call("spaces.create", workspace_id=ws, title="Hidden work", hidden=True)
        assert a["title"] == "Launch plan" and a["mode"] == "plan" and a["kind"] == "standard"
        assert a["provisioning"]["state"] == "ready" and Path(a["folder"]).is_dir()
        listed = await client.call("spaces.list", workspace_id=ws)
        assert [s["id"] for s in listed["spaces"]] == [a["id"]]
        listed = await client.call("spaces.list", workspace_id=ws, includeHidden=True)
        assert {s["id"] for s in listed["spaces"]} == {a["id"], b["id"]}

        renamed = await client.call("spaces.rename", workspace_id=ws, space_id=a["id"], title="Launch")
        assert renamed["title"] == "Launch"
        msg = await client.call(
            "messages.post", workspace_id=ws, space_id=a["id"], content="hello", metadata={"chat": {"x": "1"}}
        )
        assert msg["author"]["kind"] == "user" and msg["metadata"] == {"chat": {"x": "1"}}
        archived = await client.call("spaces.archive", workspace_id=ws, space_id=a["id"])
        assert archived["archivedAt"] is not None
        with pytest.raises(RpcError) as err:
            await client.call("messages.post", workspace_id=ws, space_id=a["id"], content="late")
        assert err.value.code == "refused" and "archived" in err.value.message
        assert (await client.call("spaces.list", workspace_id=ws))["spaces"] == []
        with_archived = await client.call("spaces.list", workspace_id=ws, includeArchived=True)
        assert [s["id"] for s in with_archived["spaces"]] == [a["id"]]
        history = await client.call("messages.list", workspace_id=ws, space_id=a["id"])
        assert [m["content"] for m in history["messages"]] == ["hello"]


@pytest.mark.parametrize(
    ("args", "code", "needle"),
    [
        ({"title": ""}, "invalid_args", "title must not be empty"),
        ({"title": "x" * 49}, "invalid_args", "limit is 48"),
        ({"title": "ok", "mode": "party"}, "invalid_args", "mode must be one of chat, review, plan"),
        ({"title": "ok", "colour": "red"}, "invalid_args", "colour"),
    ],
)
async def test_bad_space_input(tmp_path: Path, args: dict[str, object], code: str, needle: str) -> None:
    async with workspace_server(tmp_path) as (_srv, client, ws):
        with pytest.raises(RpcError) as err:
            await client.call("spaces.create", workspace_id=ws, **args)
        assert err.value.code == code and needle in err.value.message


async def test_unknown_space(tmp_path: Path) -> None:
    async with workspace_server(tmp_path) as (_srv, client, ws):
        for op, extra in [("spaces.get", {}), ("messages.list", {}), ("messages.post", {"content": "x"})]:
            with pytest.raises(RpcError) as err:
                await client.call(op, workspace_id=ws, space_id="nope", **extra)
            assert err.value.code == "not_found" and "space nope" in err.value.message


async def test_watch_streams_and_replays(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("hangar.workspace.watch.REPLAY_PAGE", 2)  # replay crosses several pages
    async with workspace_server(tmp_path) as (_srv, client, ws):
        space = await client.call("spaces.create", workspace_id=ws, title="w")
        other = await client.call("spaces.create", workspace_id=ws, title="other")
        watch = await client.watch("spaces.watch", workspace_id=ws, space_id=space["id"])
        assert watch.result["space"]["id"] == space["id"]
        for i in range(3):
            await client.call("messages.post", workspace_id=ws, space_id=other["id"], content=f"noise {i}")
            await client.call("messages.post", workspace_id=ws, space_id=space["id"], content=f"m{i}")
        frames = [await watch.next() for _ in range(3)]
        assert [f["payload"]["message"]["content"] for f in frames] == ["m0", "m1", "m2"]
        assert all(f["type"] == "workspace.messagePosted" for f in frames)
        await watch.close()

        # A watcher reconnecting after the first message gets the rest replayed, then live ones, no duplicates.
        again = await client.watch("spaces.watch", workspace_id=ws, space_id=space["id"], afterSeq=frames[0]["seq"])
        await client.call("messages.post", workspace_id=ws, space_id=space["id"], content="m3")
        got = [(await again.next())["payload"]["message"]["content"] for _ in range(3)]
        assert got == ["m1", "m2", "m3"]


async def test_guest_reads_but_cannot_post(tmp_path: Path) -> None:
    async with workspace_server(tmp_path) as (srv, client, ws):
        space = await client.call("spaces.create", workspace_id=ws, title="w")
        from tests.support.rpc import RpcClient

        token = await srv.new_user_token(ws, "guest", name="guest")
        async with RpcClient(srv.ws_url, token) as guest:
            assert (await guest.call("messages.list", workspace_id=ws, space_id=space["id"]))["messages"] == []
            with pytest.raises(RpcError) as err:
                await guest.call("messages.post", workspace_id=ws, space_id=space["id"], content="hi")
            assert err.value.code == "forbidden"


async def test_argument_errors_name_fields_as_the_contract_writes_them(tmp_path: Path) -> None:
    async with workspace_server(tmp_path) as (_srv, client, ws):
        for op, args, field in [
            ("messages.post", {"content": "x"}, "space_id"),
            ("runs.get", {}, "runId"),
            ("messages.list", {"spaceId": "s", "afterSeq": -1}, "afterSeq"),
        ]:
            with pytest.raises(RpcError) as err:
                await client.call(op, workspace_id=ws, **args)
            assert err.value.code == "invalid_args" and field in err.value.message, err.value.message
        # Both spellings are accepted.
        space = await client.call("spaces.create", workspace_id=ws, title="x")
        await client.call("messages.post", workspace_id=ws, spaceId=space["id"], content="a")
        await client.call("messages.post", workspace_id=ws, space_id=space["id"], content="b")
        listed = await client.call("messages.list", workspace_id=ws, space_id=space["id"], after_seq=0)
        assert [m["content"] for m in listed["messages"]] == ["a", "b"]


async def test_last_with_before_seq_pages_back_through_the_history(tmp_path: Path) -> None:
    async with workspace_server(tmp_path) as (_srv, client, ws):
        space = await client.call("spaces.create", workspace_id=ws, title="Long")
        other = await client.call("spaces.create", workspace_id=ws, title="Other")
        for i in range(7):
            await client.call("messages.post", workspace_id=ws, space_id=space["id"], content=f"m{i}")
            await client.call("messages.post", workspace_id=ws, space_id=other["id"], content=f"o{i}")
        newest = (await client.call("messages.list", workspace_id=ws, space_id=space["id"], last=3))["messages"]
        assert [m["content"] for m in newest] == ["m4", "m5", "m6"]
        seen = [m["content"] for m in newest]
        before = newest[0]["seq"]
        while True:
            page = await client.call("messages.list", workspace_id=ws, space_id=space["id"], last=3, beforeSeq=before)
            if not page["messages"]:
                break
            seen = [m["content"] for m in page["messages"]] + seen
            before = page["messages"][0]["seq"]
        assert seen == [f"m{i}" for i in range(7)]  # every message once, in order, none of the other space's
        with pytest.raises(RpcError) as err:
            await client.call("messages.list", workspace_id=ws, space_id=space["id"], beforeSeq=before)
        assert err.value.code == "invalid_args" and "beforeSeq" in err.value.message
