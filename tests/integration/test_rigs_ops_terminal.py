"""The live terminal lane over a real WebSocket: a PTY in the rig, binary frames both ways, JSON resize,
both ways to authenticate, its own signed target, read-only while someone else holds control."""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
import websockets

from hangar.rigs.lanes.signing import LaneSigner
from tests.integration.rigs_env import RigsEnv, rigs_server
from tests.support.rpc import RpcClient

pytestmark = pytest.mark.packs("terminal")


async def read_until(term: websockets.ClientConnection, marker: bytes) -> bytes:
    seen = b""
    while marker not in seen:
        frame = await asyncio.wait_for(term.recv(), 30)
        seen += frame if isinstance(frame, bytes) else frame.encode()
    return seen


async def next_text(term: websockets.ClientConnection) -> dict[str, Any]:
    while True:
        frame = await asyncio.wait_for(term.recv(), 30)
        if isinstance(frame, str):
            return dict(json.loads(frame))


async def terminal_url(env: RigsEnv, rig: str, client: RpcClient | None = None) -> str:
    reply = await (client or env.client).call("rig.terminalUrl", workspace_id=env.ws, rigId=rig)
    assert reply["url"].startswith("ws") and reply["path"].startswith(f"/rig/terminal/{rig}?sig=")
    return env.ws_origin + reply["path"]


async def test_a_shell_over_the_socket_with_resize(tmp_path: Path) -> None:
    async with rigs_server(tmp_path) as env:
        rig = await env.open()
        url = await terminal_url(env, rig)
        headers = {"Authorization": f"Bearer {env.srv.owner_token}"}
        async with websockets.connect(url + "&cols=90&rows=20", additional_headers=headers) as term:
            await term.send(b"echo $((6*7)) $TERM $(id -un)\n")
            assert b"42 xterm-256color rig" in await read_until(term, b"xterm-256color rig")
            await term.send(b"stty size\n")
            assert b"20 90" in await read_until(term, b"20 90")
            await term.send(json.dumps({"type": "resize", "cols": 132, "rows": 43}))
            await term.send(b"stty size\n")
            assert b"43 132" in await read_until(term, b"43 132")
            await term.send('{"type": "paste", "data": "x"}')
            notice = await next_text(term)
            assert notice["type"] == "error" and notice["code"] == "invalid_args"
            await term.send(json.dumps({"type": "resize", "cols": 0, "rows": 10}))
            assert (await next_text(term))["code"] == "invalid_args"
            await term.send(b"echo still-here\n")
            await read_until(term, b"still-here\r\n")
        await asyncio.sleep(0.2)  # the server logs the lane when it notices the close
        log = await env.manager.store.actions(env.ws, rig)
        opened = next(e for e in log if e.verb == "terminal.open")
        assert opened.details == {"cols": 90, "rows": 20}
        closed = next(e for e in log if e.verb == "terminal.close")
        typed = b"echo $((6*7)) $TERM $(id -un)\nstty size\nstty size\necho still-here\n"
        assert closed.details == {"input": {"length": len(typed), "sha256": hashlib.sha256(typed).hexdigest()}}


async def test_first_frame_authentication_for_browsers(tmp_path: Path) -> None:
    async with rigs_server(tmp_path) as env:
        rig = await env.open()
        url = await terminal_url(env, rig)
        async with websockets.connect(url) as term:
            await term.send(json.dumps({"type": "auth", "token": env.srv.owner_token}))
            await term.send(b"echo framed-$((1+1))\n")
            await read_until(term, b"framed-2")
        async with websockets.connect(url) as term:
            await term.send(json.dumps({"type": "auth", "token": "hgr_not-a-token"}))
            err = await next_text(term)
            assert err["code"] == "unauthenticated"
            await asyncio.wait_for(term.wait_closed(), 10)
            assert term.close_code == 4401


async def test_the_terminal_lane_has_its_own_target(tmp_path: Path) -> None:
    async with rigs_server(tmp_path) as env:
        rig = await env.open()
        headers = {"Authorization": f"Bearer {env.srv.owner_token}"}
        signer = LaneSigner(env.srv.ctx.secrets, env.srv.ctx.clock)
        for lane in ("files", "watch"):
            token, _ = signer.mint(lane, env.ws, rig, env.srv.owner_id)  # type: ignore[arg-type]
            async with websockets.connect(
                f"{env.ws_origin}/rig/terminal/{rig}?sig={token}", additional_headers=headers
            ) as t:
                err = await next_text(t)
                assert err["code"] == "forbidden" and "another lane" in err["message"]
                await asyncio.wait_for(t.wait_closed(), 10)
                assert t.close_code == 4403
        member = await env.srv.new_user_token(env.ws, "member", name="m")
        url = await terminal_url(env, rig)  # minted for the owner
        async with websockets.connect(url, additional_headers={"Authorization": f"Bearer {member}"}) as t:
            assert "another person" in (await next_text(t))["message"]


async def test_input_is_dropped_while_someone_else_holds_control(tmp_path: Path) -> None:
    async with rigs_server(tmp_path) as env:
        rig = await env.open()
        url = await terminal_url(env, rig)
        headers = {"Authorization": f"Bearer {env.srv.owner_token}"}
        member = await env.srv.new_user_token(env.ws, "member", name="driver")
        async with websockets.connect(url, additional_headers=headers) as term, RpcClient(env.srv.ws_url, member) as m:
            await term.send(b"echo ready-$((2+2))\n")
            await read_until(term, b"ready-4")
            await m.call("rig.takeControl", workspace_id=env.ws, rigId=rig)
            await term.send(b"touch ~/typed-while-held\n")
            notice = await next_text(term)
            assert notice["type"] == "readonly"
            # Output still flows to the watcher: the driver's own terminal writes, the watcher sees the rig.
            await m.call("rig.releaseControl", workspace_id=env.ws, rigId=rig)
            await term.send(b"ls ~; echo listed-$((3+3))\n")
            seen = await read_until(term, b"listed-6")
            assert b"typed-while-held" not in seen.split(b"listed-6")[0].split(b"ls ~")[-1]
        assert (await env.exec(rig, "ls -A ~"))["stdout"].find("typed-while-held") == -1


async def test_guardrails_hold_for_terminals(tmp_path: Path) -> None:
    async with rigs_server(tmp_path) as env:
        rig = await env.open()
        url = await terminal_url(env, rig)  # minted before the workspace turns read-only
        await env.call("guardrails.set", askFirst=["processSpawn"])
        err = await env.client.request("rig.terminalUrl", {"workspace_id": env.ws, "rigId": rig})
        assert err["error"]["code"] == "refused" and "processSpawn" in err["error"]["message"]
        await env.call("guardrails.set", readOnly=True)
        headers = {"Authorization": f"Bearer {env.srv.owner_token}"}
        async with websockets.connect(url, additional_headers=headers) as term:
            notice = await next_text(term)
            assert notice["code"] == "refused" and "read-only" in notice["message"]
            await asyncio.wait_for(term.wait_closed(), 10)
            assert term.close_code == 4403


async def test_read_only_mode_set_while_a_terminal_is_open_drops_what_is_typed(tmp_path: Path) -> None:
    async with rigs_server(tmp_path) as env:
        rig = await env.open()
        url = await terminal_url(env, rig)
        headers = {"Authorization": f"Bearer {env.srv.owner_token}"}
        async with websockets.connect(url, additional_headers=headers) as term:
            await term.send(b"echo open-$((4+4))\n")
            await read_until(term, b"open-8")
            await env.call("guardrails.set", space_id=env.space, readOnly=True)
            await term.send(b"touch ~/typed-in-read-only-mode\n")
            notice = await next_text(term)
            assert notice["code"] == "refused" and "this space is in read-only mode" in notice["message"]
            await env.call("guardrails.set", space_id=env.space, readOnly=False)
            await term.send(b"echo back-$((5+5))\n")  # out of read-only mode, typing works again
            await read_until(term, b"back-10")
        assert "typed-in-read-only-mode" not in (await env.exec(rig, "ls -A ~"))["stdout"]
