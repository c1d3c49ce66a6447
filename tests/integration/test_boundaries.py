"""Every bad input gets a coded error at the boundary, never ``internal`` and never a dropped socket; HTTP bodies
past a route's limit are refused before they are read; guessing pairing codes is rate limited."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import websockets

from hangar.httpkit.ratelimit import BUDGETS
from tests.support.processes import hangar_serve, owner_token
from tests.support.rpc import RpcClient
from tests.support.server import running_server

LONE = "\ud800"


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


async def reply_to(c: RpcClient, raw: str) -> dict[str, Any]:
    await c.send_raw(raw)
    frame = await asyncio.wait_for(c.unsolicited.get(), 10)
    return dict(frame)


async def test_hostile_frames_get_coded_errors_and_the_socket_keeps_serving(tmp_path: Path) -> None:
    async with running_server(tmp_path) as srv, RpcClient(srv.ws_url, srv.owner_token) as c:
        ws = await srv.new_workspace("b")
        space = await c.call("spaces.create", workspace_id=ws, title="s")
        hostile = [
            '{"id": ' + "9" * 5000 + ', "op": "server.info"}',
            nested(10_000),
            '{"id": 1, "op": "server.info", "args": ' + nested(400) + "}",
            '{"id": "x", "op": "server.info", "args": {"a": NaN}}',
        ]
        for raw in hostile:
            frame = await reply_to(c, raw)
            assert frame["ok"] is False and frame["error"]["code"] == "invalid_args", (raw[:30], frame)
        calls: list[tuple[str, dict[str, Any]]] = [
            ("spaces.get", {"workspace_id": ws + LONE, "space_id": space["id"]}),
            ("spaces.get", {"workspace_id": ws, "space_id": LONE}),
            ("events.list", {"workspace_id": ws, "afterSeq": 2**63}),
            ("messages.post", {"workspace_id": ws, "space_id": space["id"], "content": "x" + LONE}),
            (
                "messages.post",
                {"workspace_id": ws, "space_id": space["id"], "content": "hi", "metadata": json.loads(nested(400))},
            ),
            ("spaces.get", {"workspace_id": ws, "space_id": "x" * 200_000}),
            ("worktrees.cleanup", {"workspace_id": ws, "space_id": "y" * 200_000}),
            ("guardrails.set", {"workspace_id": ws, "readOnly": "yes"}),
            ("sso.sessionPolicy", {"maxAgeMinutes": True, "idleTimeoutMinutes": 0}),
        ]
        for op, args in calls:
            reply = await asyncio.wait_for(c.request(op, args), 10)  # one op: {op}
            assert reply["ok"] is False and reply["error"]["code"] in ("invalid_args", "not_found"), (op, reply)
        assert (await c.call("guardrails.get", workspace_id=ws))["readOnly"] is False
        assert (await c.call("server.info"))["version"]


async def test_hostile_auth_frames_close_with_a_code(tmp_path: Path) -> None:
    async with running_server(tmp_path) as srv:
        for raw in (nested(10_000), json.dumps({"type": "auth", "token": srv.owner_token + LONE})):
            async with websockets.connect(srv.ws_url) as conn:
                await conn.send(raw)
                reply = json.loads(await asyncio.wait_for(conn.recv(), 10))
                assert reply["error"]["code"] == "unauthenticated"
                with pytest.raises(websockets.ConnectionClosed):
                    await asyncio.wait_for(conn.recv(), 10)
                assert conn.close_code == 4401


async def test_oversized_pairing_bodies_are_refused_before_they_are_read_and_guessing_is_limited(
    tmp_path: Path,
) -> None:
    async with running_server(tmp_path) as srv:
        host, port = srv.url.removeprefix("http://").split(":")

        def post_head_only() -> tuple[bytes, float]:
            with socket.create_connection((host, int(port)), timeout=10) as sock:
                sock.sendall(
                    b"POST /auth/pair HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    b"Content-Length: 200000000\r\n\r\n{"
                )
                started = time.monotonic()
                return sock.recv(4096), time.monotonic() - started

        head, waited = await asyncio.to_thread(post_head_only)  # the server runs in this test's event loop
        assert head.startswith(b"HTTP/1.1 413"), head[:80]
        assert waited < 5  # answered without waiting for 200 MB
        async with httpx.AsyncClient() as http:
            codes = []
            for _ in range(40):
                r = await http.post(f"{srv.url}/auth/pair", json={"code": "NOPE-NOPE", "deviceName": "x"})
                codes.append(r.status_code)
                if r.status_code == 429:
                    assert int(r.headers["Retry-After"]) >= 1
                    break
            assert codes[0] == 400 and codes[-1] == 429, codes
            # Sign-ins started and never finished are bounded too (a generous budget: each completed one gives its
            # start back, so people signing in are never refused; see test_signin_limits).
            starts = BUDGETS["signin-start"].burst
            signins = [(await http.get(f"{srv.url}/oidc/login")).status_code for _ in range(starts + 20)]
            assert signins[-1] == 429 and 429 not in signins[:starts], signins


def test_a_request_head_past_the_cap_is_refused_without_reading_it_whole(tmp_path: Path) -> None:
    data = tmp_path / "data"
    owner_token(data)
    with hangar_serve(data) as srv:
        host, port = srv.url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ")
            sent = 0
            try:
                while sent < 64 * 1024 * 1024:
                    sock.sendall(b"a" * 65536)
                    sent += 65536
            except OSError:
                pass  # the server stopped reading and closed
            try:
                answer = sock.recv(4096)
            except OSError:
                answer = b""
        assert sent < 8 * 1024 * 1024, "the server read the oversized head"
        assert answer == b"" or answer.startswith((b"HTTP/1.1 431", b"HTTP/1.1 400")), answer[:80]
        assert httpx.get(f"{srv.url}/healthz").status_code == 200
