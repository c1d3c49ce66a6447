"""The chat ops over the real server and RPC socket: roles, write-only tokens, links by code and email, the roster
watch, the bridges' unique indexes, the deep-link page, and connections started for stored credentials."""

from __future__ import annotations

import json
import os
import socket
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from hangar.chat.connections import ChatConnection
from hangar.chat.links import LinkedMember, LinkRefusal
from hangar.chat.open_streams import OpenStream
from hangar.chat.part import make_chat_part
from hangar.chat.service import ChatService
from hangar.chat.tables import chat_space_links
from hangar.core.part import Part
from hangar.core.principal import Role
from hangar.identity import IdentityService, Workspace
from hangar.server.parts import all_parts
from tests.support.records import on_postgresql, stored_secret, stored_text
from tests.support.rpc import RpcClient, RpcError
from tests.support.server import running_server
from tests.unit.chat.core.recorded import Recorded

P = "chatprovider"
# The chat part with nothing plugged in to dial: these tests are about storage, roles and links.
NO_TRANSPORT = [make_chat_part(None) if p.name == "chat" else p for p in all_parts()]
BOT = "xoxb-1111-2222-botsecretvalue"
APP = "xapp-1-A1-3333-appsecretvalue"
REFRESH = "xoxe-1-refreshsecretvalue"
SECRETS = (BOT, APP, REFRESH, "botsecretvalue", "appsecretvalue", "refreshsecretvalue")


def _has_secret(value: Any) -> bool:
    text = json.dumps(value)
    return any(s in text for s in SECRETS)


async def _forbidden(client: RpcClient, op: str, **args: Any) -> None:
    with pytest.raises(RpcError) as err:
        await client.call(op, **args)
    assert err.value.code == "forbidden", (op, err.value)


async def test_each_op_holds_its_minimum_role(tmp_path: Path) -> None:
    async with running_server(tmp_path, parts=NO_TRANSPORT) as srv, RpcClient(srv.ws_url, srv.owner_token) as owner:
        ws = await srv.new_workspace("roles")
        guest_t = await srv.new_user_token(ws, "guest", name="g")
        member_t = await srv.new_user_token(ws, "member", name="m")
        admin_t = await srv.new_user_token(ws, "admin", name="a")
        creds = {"botToken": BOT, "appToken": APP}
        async with (
            RpcClient(srv.ws_url, guest_t) as guest,
            RpcClient(srv.ws_url, member_t) as member,
            RpcClient(srv.ws_url, admin_t) as admin,
        ):
            for reader in (guest, member, admin):
                assert [p["provider"] for p in await reader.call("chat.providers", workspace_id=ws)] == [P]
                assert (await reader.call("chat.status", workspace_id=ws))["state"] == "disconnected"
                assert await reader.call("chat.listUserLinks", workspace_id=ws) == []
                watch = await reader.watch("chat.watchUserLinks", workspace_id=ws)
                assert watch.result == {"links": []}
                await watch.close()
            await _forbidden(guest, "chat.beginUserLink", workspace_id=ws, provider=P)
            await _forbidden(guest, "chat.unlinkUser", workspace_id=ws, provider=P)
            for lesser in (guest, member):
                await _forbidden(lesser, "chat.connect", workspace_id=ws, provider=P, credentials=creds)
                await _forbidden(lesser, "chat.disconnect", workspace_id=ws, provider=P)
                await _forbidden(lesser, "chat.setupLink", workspace_id=ws, provider=P)
            assert len((await member.call("chat.beginUserLink", workspace_id=ws, provider=P))["code"]) == 6
            assert (await admin.call("chat.connect", workspace_id=ws, provider=P, credentials=creds))["state"]
            assert (await admin.call("chat.setupLink", workspace_id=ws, provider=P))["url"].startswith("https://")
            assert (await admin.call("chat.disconnect", workspace_id=ws, provider=P))["state"] == "disconnected"
            with pytest.raises(RpcError) as no_ws:
                await owner.call("chat.status")
            assert no_ws.value.code == "workspace_required"


async def test_tokens_go_in_and_never_come_back(tmp_path: Path) -> None:
    async with running_server(tmp_path, parts=NO_TRANSPORT) as srv, RpcClient(srv.ws_url, srv.owner_token) as c:
        ws = await srv.new_workspace("tokens")
        with pytest.raises(RpcError) as bad:
            await c.call("chat.connect", workspace_id=ws, provider=P, credentials={"botToken": APP, "appToken": APP})
        assert bad.value.code == "invalid_args" and "Bot user OAuth token must start with xoxb-" in bad.value.message
        assert not _has_secret(bad.value.message)
        providers = await c.call("chat.providers", workspace_id=ws)
        refusals = {f["id"]: f["refusal"] for f in providers[0]["fields"]}
        assert refusals["botToken"] == "Bot user OAuth token must start with xoxb-"  # the client shows this one
        assert providers[0]["capabilities"]["maxMessageLength"] == 39000

        creds = {"botToken": f"  {BOT} ", "appToken": APP, "configRefreshToken": REFRESH, "extra": "dropped"}
        reply = await c.call("chat.connect", workspace_id=ws, provider=P, credentials=creds)
        # Nothing is plugged in to dial: the state says so rather than pretending to connect.
        assert reply == {"state": "error", "error": "no transport"}

        def stored() -> Any:
            return json.loads(stored_secret(srv.data_dir, f"chat_credentials/{P}", ws) or b"null")

        assert stored() == {"botToken": BOT, "appToken": APP, "configRefreshToken": REFRESH}
        if not on_postgresql(srv.data_dir):  # files on SQLite, owner-only (sealed rows on PostgreSQL)
            path = srv.data_dir / ws / "chat_credentials" / f"{P}.json"
            assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        # An optional field left empty keeps its stored value; required ones are needed every time.
        await c.call("chat.connect", workspace_id=ws, provider=P, credentials={"botToken": BOT, "appToken": APP})
        assert stored()["configRefreshToken"] == REFRESH
        with pytest.raises(RpcError, match="App-level token is required"):
            await c.call("chat.connect", workspace_id=ws, provider=P, credentials={"botToken": BOT})

        reads = [
            await c.call("chat.status", workspace_id=ws),
            await c.call("chat.status", workspace_id=ws, provider=P),
            await c.call("chat.providers", workspace_id=ws),
            await c.call("chat.setupLink", workspace_id=ws, provider=P),
            await c.call("chat.listUserLinks", workspace_id=ws),
        ]
        assert reads[0] == {"provider": P, "state": "error", "error": "no transport", "streamingAvailable": False}
        assert reads[2][0]["status"]["state"] == "error"
        assert not any(_has_secret(r) for r in reads)
        for held in (stored_text(srv.data_dir, ws), stored_text(srv.data_dir)):
            assert not any(s.encode() in held for s in SECRETS)  # audit rows name fields only

        await c.call("chat.disconnect", workspace_id=ws, provider=P)
        assert stored() is None
        assert (await c.call("chat.status", workspace_id=ws))["state"] == "disconnected"


async def test_a_member_links_by_code_and_the_roster_follows(tmp_path: Path) -> None:
    async with running_server(tmp_path, parts=NO_TRANSPORT) as srv, RpcClient(srv.ws_url, srv.owner_token) as owner:
        ws = await srv.new_workspace("links")
        member_t = await srv.new_user_token(ws, "member", name="m")
        other_t = await srv.new_user_token(ws, "member", name="o")
        chat = srv.ctx.service(ChatService)
        roster = await owner.watch("chat.watchUserLinks", workspace_id=ws)
        assert roster.result == {"links": []}
        async with RpcClient(srv.ws_url, member_t) as member, RpcClient(srv.ws_url, other_t) as other:
            me = (await member.call("users.me"))["id"]
            other_id = (await other.call("users.me"))["id"]
            stale = (await member.call("chat.beginUserLink", workspace_id=ws, provider=P))["code"]
            minted = await member.call("chat.beginUserLink", workspace_id=ws, provider=P)
            assert set(minted) == {"code", "expiresAt"}
            links = chat.user_links
            # The chat side redeems (what ``/hangar link <code>`` does), case-insensitively; the older code died.
            assert await links.link_by_code(ws, P, "T1", "U1", stale) is None
            link = await links.link_by_code(ws, P, "T1", "U1", minted["code"].lower())
            assert link is not None and link.user_id == me and link.method == "code"
            assert await links.link_by_code(ws, P, "T1", "U9", minted["code"]) is None  # one use
            pushed = await roster.next()
            assert [(k["userId"], k["externalUserId"], k["method"]) for k in pushed["links"]] == [(me, "U1", "code")]
            listed = await member.call("chat.listUserLinks", workspace_id=ws, provider=P)
            assert listed == pushed["links"] and set(listed[0]) >= {"externalTeamId", "linkedAt"}

            resolved = await links.resolve_member(ws, P, "T1", "U1")
            assert isinstance(resolved, LinkedMember) and resolved.role == Role.member
            unknown = await links.resolve_member(ws, P, "T1", "U404")
            assert isinstance(unknown, LinkRefusal) and unknown.reason == "notLinked"

            # By verified email: the other member's user; an email nobody has links nobody.
            assert await links.link_by_email(ws, P, "T1", "U3", "nobody@example.test") is None
            by_email = await links.link_by_email(ws, P, "T1", "U2", "o@example.test")
            assert by_email is not None and by_email.user_id == other_id and by_email.method == "email"
            assert len((await roster.next())["links"]) == 2

            await _forbidden(member, "chat.unlinkUser", workspace_id=ws, provider=P, userId=other_id)
            assert await member.call("chat.unlinkUser", workspace_id=ws, provider=P) == {"unlinked": True}
            assert [k["userId"] for k in (await roster.next())["links"]] == [other_id]
            assert await owner.call("chat.unlinkUser", workspace_id=ws, provider=P, userId=other_id) == {
                "unlinked": True
            }
            assert (await roster.next())["links"] == []
            assert await member.call("chat.unlinkUser", workspace_id=ws, provider=P) == {"unlinked": False}

            # A link is not an access grant: once the member leaves, it resolves to a refusal.
            code = (await other.call("chat.beginUserLink", workspace_id=ws, provider=P))["code"]
            assert await links.link_by_code(ws, P, "T1", "U2", code) is not None
            await srv.ctx.service(IdentityService).remove_member(ws, other_id)
            gone = await links.resolve_member(ws, P, "T1", "U2")
            assert isinstance(gone, LinkRefusal) and gone.reason == "notMember"
        await roster.close()


async def test_a_code_minted_by_someone_who_left_links_nobody(tmp_path: Path) -> None:
    async with running_server(tmp_path, parts=NO_TRANSPORT) as srv:
        ws = await srv.new_workspace("left")
        token = await srv.new_user_token(ws, "member", name="l")
        async with RpcClient(srv.ws_url, token) as leaver:
            me = (await leaver.call("users.me"))["id"]
            code = (await leaver.call("chat.beginUserLink", workspace_id=ws, provider=P))["code"]
        await srv.ctx.service(IdentityService).remove_member(ws, me)
        assert await srv.ctx.service(ChatService).user_links.link_by_code(ws, P, "T1", "U1", code) is None


async def test_bridges_are_unique_per_thread_and_per_whole_conversation(tmp_path: Path) -> None:
    async with running_server(tmp_path, parts=NO_TRANSPORT) as srv:
        ws = await srv.new_workspace("bridges")
        bridges = srv.ctx.service(ChatService).space_links

        async def bridge(channel: str, thread: str | None, name: str | None = "eng") -> tuple[Any, bool]:
            return await bridges.find_or_create(
                ws,
                P,
                team_id="T1",
                channel_id=channel,
                thread_id=thread,
                request="please help",
                channel_name=name,
                created_by_user_id=None,
                created_by="chat",
            )

        dm, made = await bridge("D1", None, name=None)
        again, made_again = await bridge("D1", None, name=None)
        assert made and not made_again and again.cc_space_id == dm.cc_space_id
        thread_a, _ = await bridge("C1", "1700000000.000100")
        thread_b, _ = await bridge("C1", "1700000000.000200")
        assert thread_a.cc_space_id != thread_b.cc_space_id
        space = await srv.ctx.service(ChatService).space_links._spaces.get(ws, dm.cc_space_id)
        assert (space.kind, space.title, space.is_external_chat) == ("chatprovider", "Slack DM · please help", True)

        engine = await srv.ctx.dbs.workspace(ws)
        row = {
            "workspace_id": ws,
            "provider": P,
            "external_team_id": "T1",
            "external_channel_id": "D1",
            "external_thread_id": None,
            "cc_space_id": dm.cc_space_id,
            "created_at": dm.created_at,
            "last_activity_at": dm.created_at,
        }
        for duplicate in (
            {**row, "id": "dup-dm"},
            {**row, "id": "dup-thread", "external_channel_id": "C1", "external_thread_id": "1700000000.000100"},
        ):
            with pytest.raises(sa.exc.IntegrityError):
                async with engine.begin() as conn:
                    await conn.execute(sa.insert(chat_space_links).values(**duplicate))

        streams = srv.ctx.service(ChatService).open_streams
        for link, ts in ((thread_a, "1.1"), (thread_b, "2.2"), (thread_b, "2.3")):
            card = {"title": "please help", "rows": []}
            await streams.record(ws, OpenStream(link.cc_space_id, P, "C1", ts, None, card, dm.created_at))
        assert sorted(s.ts for s in await streams.all(ws)) == ["1.1", "2.3"]  # one per space, the latest

        async with engine.begin() as conn:  # a deleted space takes its bridge and open stream with it
            await conn.execute(sa.text("DELETE FROM spaces WHERE id = :id"), {"id": thread_a.cc_space_id})
        assert await bridges.find(ws, P, "C1", "1700000000.000100") is None
        assert [s.ts for s in await streams.all(ws)] == ["2.3"]
        await streams.finished(ws, thread_b.cc_space_id)
        assert await streams.all(ws) == []
        assert await bridges.find(ws, P, "C1", "1700000000.000200") is not None


async def test_the_deep_link_page_is_public_and_shape_checked(tmp_path: Path) -> None:
    async with running_server(tmp_path, parts=NO_TRANSPORT) as srv, httpx.AsyncClient(base_url=srv.url) as http:
        ok = await http.get("/open/workspaces/any-ws/spaces/s.1")
        assert ok.status_code == 200 and ok.headers["cache-control"] == "no-store"
        assert 'href="hangar://workspaces/any-ws/spaces/s.1"' in ok.text and "<script" not in ok.text
        for bad in ("/open/workspaces/any-ws/spaces/a$b", "/open/workspaces/any-ws/rigs/r", "/open/x"):
            assert (await http.get(bad)).status_code == 404, bad


def recording_parts() -> tuple[list[Recorded], list[Part]]:
    """Every part, the chat part's connections recorded instead of dialled: (what was made, the parts)."""
    made: list[Recorded] = []

    async def factory(workspace: Workspace, provider: str, credentials: Mapping[str, str]) -> ChatConnection:
        made.append(Recorded(workspace, credentials))
        return made[-1]

    return made, [make_chat_part(lambda _app: factory) if p.name == "chat" else p for p in all_parts()]


async def test_the_server_starts_a_connection_for_stored_and_legacy_credentials(tmp_path: Path) -> None:
    made, parts = recording_parts()
    async with running_server(tmp_path, parts=parts) as srv, RpcClient(srv.ws_url, srv.owner_token) as c:
        stored = await srv.new_workspace("stored")
        legacy = await srv.new_workspace("legacy")
        await srv.new_workspace("none")
        creds = {"botToken": BOT, "appToken": APP}
        assert (await c.call("chat.connect", workspace_id=stored, provider=P, credentials=creds)) == {
            "state": "connecting"
        }
        status = await c.call("chat.status", workspace_id=stored)
        here = {"host": socket.gethostname(), "pid": os.getpid()}  # this process holds the connection's claim
        assert status == {"provider": P, "state": "connecting", "streamingAvailable": True, "owner": here}
    assert made[0].stopped  # the part stops its connections with the server
    # Where credentials were kept before: the workspace's directory (an install on PostgreSQL makes it only
    # when a file is kept there; one moved from SQLite has it).
    (tmp_path / legacy).mkdir(exist_ok=True)
    (tmp_path / legacy / "chat_credentials.json").write_text(json.dumps(creds))
    made.clear()
    async with running_server(tmp_path, parts=parts):
        assert sorted((m.workspace.id, m.credentials == creds) for m in made) == sorted(
            [(stored, True), (legacy, True)]
        )
        assert not (tmp_path / legacy / "chat_credentials.json").exists()
        assert stored_secret(tmp_path, f"chat_credentials/{P}", legacy) is not None  # moved where it is kept now


async def test_the_connection_holder_is_shown_to_admins_and_the_server_owner_only(tmp_path: Path) -> None:
    _made, parts = recording_parts()
    async with running_server(tmp_path, parts=parts) as srv, RpcClient(srv.ws_url, srv.owner_token) as owner:
        ws = await srv.new_workspace("holder")
        tokens = {role: await srv.new_user_token(ws, role, name=role[0]) for role in ("guest", "member", "admin")}
        creds = {"botToken": BOT, "appToken": APP}
        await owner.call("chat.connect", workspace_id=ws, provider=P, credentials=creds)
        here = {"host": socket.gethostname(), "pid": os.getpid()}
        for role, token in tokens.items():
            async with RpcClient(srv.ws_url, token) as c:
                status = await c.call("chat.status", workspace_id=ws)
                (entry,) = await c.call("chat.providers", workspace_id=ws)
                seen = [status.get("owner"), entry["status"].get("owner")]
                assert seen == ([here, here] if role == "admin" else [None, None]), (role, status, entry)
                assert status["state"] == "connecting"  # the rest of the status is everyone's
        assert (await owner.call("chat.status", workspace_id=ws))["owner"] == here
