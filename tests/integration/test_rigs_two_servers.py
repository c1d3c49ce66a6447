"""A rig's calls and lanes asked of a server that does not run it: relayed to the server that does; and a dev
domain whose target rig another server runs, reached through that server.

Two real servers on one data directory: A in this process (it runs the rig, on a real enclosure) and B a
``hangar serve`` process. A person whose client reached B drives A's rig as if B ran it: its ops (exec, list,
the lane URLs, close) answer the same, its file lane (drop, read back) and terminal lane carry their bytes both
ways, refusals are the holder's own and reach the caller unchanged, and nothing about the relay reaches the
caller. The relay route itself refuses a caller that is not a server.
"""

from __future__ import annotations

import base64
import json
import socket
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
import websockets

from hangar.core.principal import Role
from hangar.identity import IdentityService
from hangar.rigs.devdomains.crossing import DEV_RELAY_PATH, token_target
from hangar.rigs.model import Phase
from hangar.rigs.store import rig_sessions
from hangar.rpc.op_caller import OpCaller
from hangar.rpc.relay import RELAY_HEADER, RELAY_PATH, RelayTokens, principal_to_wire, vouched_target
from tests.integration.rigs_enclosure_env import PACKS
from tests.integration.rigs_env import RigsEnv, rigs_server
from tests.integration.test_rigs_ops_terminal import read_until
from tests.support.processes import ServeProcess, hangar_serve
from tests.support.rpc import RpcClient, RpcError

pytestmark = [pytest.mark.packs("terminal"), pytest.mark.slow]


def b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


@pytest.fixture
async def two(tmp_path: Path) -> AsyncIterator[tuple[RigsEnv, ServeProcess]]:
    async with rigs_server(tmp_path) as env:
        with hangar_serve(env.srv.data_dir, env={"HANGAR_RIG_PACKS_DIR": str(PACKS)}) as other:
            yield env, other


async def test_a_rig_of_one_server_is_driven_through_another(two: tuple[RigsEnv, ServeProcess]) -> None:
    env, b = two
    rig = await env.open()
    async with RpcClient(b.ws_url, env.srv.owner_token) as via_b:
        # A watch through B follows the rig on A: its snapshot, then what happens to it.
        watch = await via_b.watch("rig.watch", workspace_id=env.ws, rigId=rig)
        assert watch.result["rigId"] == rig and watch.result["phase"] == "ready", watch.result
        out = await via_b.call("rig.exec", workspace_id=env.ws, rigId=rig, command="echo relayed $(id -un)")
        assert out["exitCode"] == 0 and out["stdout"].strip() == "relayed rig"
        seen = [await watch.next(30) for _ in range(2)]
        assert [e["type"] for e in seen] == ["exec", "execResult"], seen
        listed = await via_b.call("rig_list", workspace_id=env.ws)
        assert [(r["rigId"], r["status"]) for r in listed] == [(rig, "ready")]
        # The exec ran on A, as the caller: A's action log holds it.
        actions = await env.manager.store.actions(env.ws, rig)
        assert [a.verb for a in actions if a.verb == "exec"] == ["exec"]

        # The file lane: minted through B, used through B, served by A.
        path = str((await via_b.call("rig.fileLaneUrl", workspace_id=env.ws, rigId=rig))["path"])
        auth = {"Authorization": f"Bearer {env.srv.owner_token}"}
        async with httpx.AsyncClient(base_url=b.url, timeout=60) as http:
            dropped = await http.post(path, headers=auth, files=[("file", ("hi.txt", b"through B"))])
            assert dropped.status_code == 200, dropped.text
            assert dropped.json()["files"][0]["path"] == "/home/rig/drops/hi.txt"
            back = await http.get(f"{path}&p={b64('/home/rig/drops/hi.txt')}", headers=auth)
            assert back.status_code == 200 and back.content == b"through B"
            assert RELAY_HEADER not in back.headers
            # A refusal is the holder's, passed on unchanged (status and body).
            refused = await http.get(f"{path}&p={b64('/home/rig/drops/none.txt')}", headers=auth)
            assert refused.status_code == 404 and refused.json()["error"]["code"] == "not_found"

        # The terminal lane: every byte both ways, and the holder's close.
        reply = await via_b.call("rig.terminalUrl", workspace_id=env.ws, rigId=rig)
        url = "ws" + b.url.removeprefix("http") + reply["path"]
        async with websockets.connect(url, additional_headers=auth) as term:
            await term.send(b"echo $((6*7)) over-b\n")
            assert b"42 over-b" in await read_until(term, b"42 over-b")
            await term.send(json.dumps({"type": "resize", "cols": 101, "rows": 33}))
            await term.send(b"stty size\n")
            assert b"33 101" in await read_until(term, b"33 101")

        closed = await via_b.call("rig_close", workspace_id=env.ws, rigId=rig)
        assert closed["phase"] == "closed"
        ended = [await watch.next(30) for _ in range(1)]
        while ended[-1].get("phase") != "closed":
            ended.append(await watch.next(30))
    assert env.manager.rigs.find(env.ws, rig) is None  # A closed it: its processes are gone, not just its row
    rec = await env.manager.store.get(env.ws, rig)
    assert rec is not None and rec.phase is Phase.closed


async def test_the_holder_checks_a_relayed_call_and_lane_itself(two: tuple[RigsEnv, ServeProcess]) -> None:
    env, b = two
    rig = await env.open()
    tokens = RelayTokens(env.srv.ctx.secrets, env.srv.ctx.clock)
    call = {"op": "rig.exec", "args": {"workspace_id": env.ws, "rigId": rig, "command": "true"}, "door": "socket"}
    guest = await env.srv.new_user_token(env.ws, Role.guest, name="guest")
    async with httpx.AsyncClient(base_url=env.srv.url, timeout=60) as http:
        relayed = {RELAY_HEADER: tokens.mint("op:rig.exec")}
        as_guest = await http.post(RELAY_PATH, json=call, headers={**relayed, "Authorization": f"Bearer {guest}"})
        assert as_guest.json()["error"]["code"] == "forbidden"
        nobody = await http.post(RELAY_PATH, json=call, headers=relayed)
        assert nobody.json()["error"]["code"] == "unauthenticated"
    # A terminal lane minted for the owner is refused to another person by A, through B, with A's close code.
    member = await env.srv.new_user_token(env.ws, Role.member, name="member")
    reply = await env.call("rig.terminalUrl", rigId=rig)
    url = "ws" + b.url.removeprefix("http") + reply["path"]
    async with websockets.connect(url, additional_headers={"Authorization": f"Bearer {member}"}) as term:
        notice = json.loads(await term.recv())
        assert notice["type"] == "error" and notice["code"] == "forbidden", notice
        with pytest.raises(websockets.ConnectionClosed):
            await term.recv()
    assert term.close_code == 4403
    # A member's own call through B runs on A as them.
    async with RpcClient(b.ws_url, member) as via_b:
        ok = await via_b.call("rig.exec", workspace_id=env.ws, rigId=rig, command="echo member")
        assert ok["stdout"].strip() == "member"
    assert [a.principal for a in await env.manager.store.actions(env.ws, rig) if a.verb == "exec"][-1].startswith(
        "user:"
    )


async def test_the_relay_route_answers_servers_only(two: tuple[RigsEnv, ServeProcess]) -> None:
    env, b = two
    rig = await env.open()
    call = {"op": "rig.exec", "args": {"workspace_id": env.ws, "rigId": rig, "command": "true"}, "door": "socket"}
    auth = {"Authorization": f"Bearer {env.srv.owner_token}"}
    tokens = RelayTokens(env.srv.ctx.secrets, env.srv.ctx.clock)
    async with httpx.AsyncClient(base_url=env.srv.url, timeout=60) as http:
        bare = await http.post(RELAY_PATH, json=call, headers=auth)
        assert bare.status_code == 403 and "servers of this installation" in bare.json()["error"]["message"]
        other = await http.post(RELAY_PATH, json=call, headers={**auth, RELAY_HEADER: tokens.mint("op:rig_close")})
        assert other.status_code == 403 and "something else" in other.json()["error"]["message"]
        forged = tokens.mint("op:rig.exec")[:-4] + "AAAA"
        assert (await http.post(RELAY_PATH, json=call, headers={**auth, RELAY_HEADER: forged})).status_code == 403
        token = tokens.mint("op:rig.exec")
        door = await http.post(RELAY_PATH, json={**call, "door": "agent"}, headers={**auth, RELAY_HEADER: token})
        assert door.json()["error"]["code"] == "invalid_args" and "door" in door.json()["error"]["message"]
        ran = await http.post(RELAY_PATH, json=call, headers={**auth, RELAY_HEADER: token})
        assert ran.json()["ok"] is True and ran.json()["result"]["exitCode"] == 0
        # Relayed to a server that does not run the rig: an error, never a second hop, and no address in it.
        to_b = await http.post(b.url + RELAY_PATH, json=call, headers={**auth, RELAY_HEADER: token})
        assert to_b.json()["ok"] is False and to_b.json()["error"]["code"] == "unavailable"
        assert "127.0.0.1" not in to_b.json()["error"]["message"]


async def name_holder(env: RigsEnv, rig: str, origin: str | None) -> None:
    """Make the rig's row name another server (the store never moves a rig: only a test does)."""
    async with (await env.srv.ctx.dbs.workspace(env.ws)).begin() as conn:
        await conn.execute(sa.update(rig_sessions).where(rig_sessions.c.id == rig).values(server_url=origin))


async def test_a_holder_that_does_not_answer_is_unavailable_through_every_door(
    two: tuple[RigsEnv, ServeProcess],
) -> None:
    """The rig's row names a server that does not answer (it stopped, its rigs not yet closed): each door of the
    other server says so in one sentence, with no address, and nothing waits for it."""
    env, b = two
    rig = await env.open()
    paths = {
        "files": str((await env.call("rig.fileLaneUrl", rigId=rig))["path"]),
        "terminal": str((await env.call("rig.terminalUrl", rigId=rig))["path"]),
    }
    with socket.socket() as gone:  # bound, never listening: connections to it are refused
        gone.bind(("127.0.0.1", 0))
        await name_holder(env, rig, f"http://127.0.0.1:{gone.getsockname()[1]}")
        try:
            async with RpcClient(b.ws_url, env.srv.owner_token) as via_b:
                for op in ("rig.exec", "rig.watch"):
                    with pytest.raises(RpcError) as refused:
                        if op == "rig.watch":
                            await via_b.watch(op, workspace_id=env.ws, rigId=rig)
                        else:
                            await via_b.call(op, workspace_id=env.ws, rigId=rig, command="true")
                    assert refused.value.code == "unavailable", refused.value
                    assert "that server does not answer" in refused.value.message
                    assert "127.0.0.1" not in refused.value.message
            auth = {"Authorization": f"Bearer {env.srv.owner_token}"}
            async with httpx.AsyncClient(base_url=b.url, timeout=60) as http:
                read = await http.get(f"{paths['files']}&p={b64('/etc/hostname')}", headers=auth)
            assert read.status_code == 503 and "that server does not answer" in read.text
            url = "ws" + b.url.removeprefix("http") + paths["terminal"]
            async with websockets.connect(url, additional_headers=auth) as term:
                notice = json.loads(await term.recv())
                assert notice["type"] == "error" and notice["code"] == "unavailable", notice
                with pytest.raises(websockets.ConnectionClosed):
                    await term.recv()
            assert term.close_code == 4503
        finally:
            await name_holder(env, rig, env.srv.ctx.settings.serving_origin)


DEV_PORT = 18401


async def open_on(b: ServeProcess, env: RigsEnv) -> str:
    """A terminal rig of the test's space that server B runs (opened through it), once ready."""
    async with RpcClient(b.ws_url, env.srv.owner_token) as via_b:
        opened = await via_b.call("rig.open", workspace_id=env.ws, space_id=env.space, surface="terminal")
    return await env.ready(opened)


async def test_a_dev_domain_reaches_a_rig_another_server_runs(two: tuple[RigsEnv, ServeProcess]) -> None:
    """A rig on A asks for a dev domain of its space whose target rig B runs: A asks B for the connection, and the
    dev server's answer comes back; a port where nothing listens gets B's reason on A's 502 page. B's side answers
    servers only, for the name their token names, and never passes a connection on again."""
    env, b = two
    on_b = await open_on(b, env)
    async with RpcClient(b.ws_url, env.srv.owner_token) as via_b:
        started = await via_b.call(
            "rig.exec",
            workspace_id=env.ws,
            rigId=on_b,
            command=f"mkdir -p ~/site && echo 'hello from B' > ~/site/index.html && cd ~/site && "
            f"setsid -f python3 -m http.server {DEV_PORT} --bind 127.0.0.1 >/dev/null 2>&1; "
            f"for i in $(seq 200); do curl -so /dev/null http://127.0.0.1:{DEV_PORT}/ && exit 0; sleep 0.1; done; "
            "exit 1",
        )
        assert started["exitCode"] == 0, started
    on_a = await env.open()
    assert env.manager.rigs.find(env.ws, on_b) is None and env.manager.rigs.find(env.ws, on_a) is not None
    await env.manager.dev.attach(env.manager.live(env.ws, on_a))  # the lanes a browser rig has from boot
    await env.call("rig.setDevDomain", space_id=env.space, domain="app.test", rigId=on_b, guestPort=DEV_PORT)
    await env.call("rig.setDevDomain", space_id=env.space, domain="none.test", rigId=on_b, guestPort=DEV_PORT + 1)
    fetched = await env.exec(on_a, "curl -sS http://app.test/ && curl -sS http://app.test/index.html")
    assert fetched["exitCode"] == 0 and fetched["stdout"] == "hello from B\n" * 2, fetched
    missed = await env.exec(on_a, "curl -sS -w ' %{http_code}' http://none.test/")
    assert missed["stdout"].endswith(" 502") and "none.test cannot be reached" in missed["stdout"], missed

    # B's side of it: a relay token for exactly this name, from a server of this installation.
    tokens = RelayTokens(env.srv.ctx.secrets, env.srv.ctx.clock)
    base = "ws" + b.url.removeprefix("http") + DEV_RELAY_PATH

    async def ask(name: str, token: str | None) -> websockets.ClientConnection:
        query = f"?ws={env.ws}&space={env.space}&name={name}"
        headers = {RELAY_HEADER: token} if token else {}
        conn = await websockets.connect(base + query, additional_headers=headers)
        with pytest.raises(websockets.ConnectionClosed):
            await conn.recv()
        return conn

    for token in (None, "forged", tokens.mint(token_target(env.ws, env.space, "other.test"))):
        assert (await ask("app.test", token)).close_code == 4403
    # A name whose rig is not B's: B says so instead of asking A in turn.
    await env.call("rig.setDevDomain", space_id=env.space, domain="back.test", rigId=on_a, guestPort=DEV_PORT)
    back = await ask("back.test", tokens.mint(token_target(env.ws, env.space, "back.test")))
    assert back.close_code == 4502 and "this server does not run" in (back.close_reason or ""), back.close_reason
    # Another space's view of the name: not there.
    elsewhere = await env.new_space()
    gone = await websockets.connect(
        f"{base}?ws={env.ws}&space={elsewhere}&name=app.test",
        additional_headers={RELAY_HEADER: tokens.mint(token_target(env.ws, elsewhere, "app.test"))},
    )
    with pytest.raises(websockets.ConnectionClosed):
        await gone.recv()
    assert gone.close_code == 4404


async def test_a_call_a_server_makes_for_a_caller_it_vouches_for_is_relayed(
    two: tuple[RigsEnv, ServeProcess],
) -> None:
    """An agent's tool call or the chat bridge's (no credential of their own) for a rig another server runs is
    relayed with the principal the server vouches for, under a token bound to the op and to that principal; the
    holder checks that principal again itself."""
    env, b = two
    on_b = await open_on(b, env)
    owner = await env.srv.ctx.service(IdentityService).authenticate(env.srv.owner_token)
    caller = env.srv.ctx.service(OpCaller)
    exec_args = {"workspace_id": env.ws, "rigId": on_b, "command": "echo vouched"}
    for door in ("agent", "chat"):
        out = await caller.call(owner, "rig.exec", exec_args, door=door)
        assert out["exitCode"] == 0 and out["stdout"] == "vouched\n", out

    # The holder's route: the principal's own checks, run there.
    tokens = RelayTokens(env.srv.ctx.secrets, env.srv.ctx.clock)
    narrow = replace(owner, tools=frozenset({"rig.exec"}))

    async def relay(op: str, args: dict[str, Any], principal: Any, door: str, token: str) -> httpx.Response:
        body = {"op": op, "args": args, "door": door, "principal": principal}
        async with httpx.AsyncClient(base_url=b.url, timeout=60) as http:
            return await http.post(RELAY_PATH, json=body, headers={RELAY_HEADER: token})

    wire = principal_to_wire(narrow)
    close_args = {"workspace_id": env.ws, "rigId": on_b}
    refused = await relay("rig_close", close_args, wire, "agent", tokens.mint(vouched_target("rig_close", wire)))
    assert refused.json()["error"]["code"] == "forbidden", refused.text  # not among its tools, on the holder
    ran = await relay("rig.exec", exec_args, wire, "agent", tokens.mint(vouched_target("rig.exec", wire)))
    assert ran.json()["ok"] and ran.json()["result"]["stdout"] == "vouched\n", ran.text
    # A token for another principal, or for the op alone, is not good for this one.
    for token in (tokens.mint(vouched_target("rig.exec", principal_to_wire(owner))), tokens.mint("op:rig.exec")):
        forged = await relay("rig.exec", exec_args, wire, "agent", token)
        assert forged.status_code == 403, forged.text
    # A vouched caller comes through the doors of callers without a credential only, and reads as a principal.
    good = tokens.mint(vouched_target("rig.exec", wire))
    socket_door = await relay("rig.exec", exec_args, wire, "socket", good)
    assert socket_door.json()["error"]["code"] == "invalid_args" and "door" in socket_door.json()["error"]["message"]
    junk = {"user_id": ["not", "a", "string"]}
    unread = await relay("rig.exec", exec_args, junk, "agent", tokens.mint(vouched_target("rig.exec", junk)))
    assert unread.json()["error"]["code"] == "invalid_args" and "principal" in unread.text
