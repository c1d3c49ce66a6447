"""The server door from inside a real rig, against a real server: shut on a plain rig (the server's listener stays
out of reach), open only while held, and then passing the MCP endpoint and nothing else of the listener."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hangar.rigs.backends.enclosure import EnclosureRig
from hangar.rigs.egress.rules import GATE_ADDRESS
from tests.integration.rigs_enclosure_env import running_rig
from tests.support.server import running_server

pytestmark = [pytest.mark.needs_root, pytest.mark.packs("terminal")]

DOOR = f"http://{GATE_ADDRESS}:984"
TOOLS_LIST = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
PIPELINED = (
    f"import socket, sys; s = socket.create_connection(('{GATE_ADDRESS}', 984)); "
    "body = sys.argv[1].encode(); "
    "s.sendall(b'POST /mcp HTTP/1.1\\r\\nHost: x\\r\\nAuthorization: Bearer ' + sys.argv[2].encode() + "
    "b'\\r\\nContent-Type: application/json\\r\\nAccept: application/json, text/event-stream\\r\\n"
    "Content-Length: %d\\r\\n\\r\\n' % len(body) + body + b'GET /healthz HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n'); "
    "out = b''\n"
    "while chunk := s.recv(65536): out += chunk\n"
    "sys.stdout.write(out.decode())"
)


async def sh(rig: EnclosureRig, command: str) -> str:
    out = await rig.exec(command, timeout_s=30)
    return out.stdout + out.stderr


def curl(path: str, *extra: str) -> str:
    return " ".join(["curl -sS -m 10 -w '\\n%{http_code}\\n'", *extra, f"'{DOOR}{path}'", "; echo rc=$?"])


async def test_the_server_door_is_shut_on_a_plain_rig_and_passes_only_mcp_when_open(tmp_path: Path) -> None:
    async with running_server(tmp_path / "data") as srv, running_rig() as rig:
        port = srv.url.rsplit(":", 1)[1]
        # A plain rig: neither the server's port on loopback, nor on the gate's address, nor the door's port.
        assert "rc=7" in await sh(rig, f"curl -sS -m 5 http://127.0.0.1:{port}/healthz; echo rc=$?")
        for url in (f"http://{GATE_ADDRESS}:{port}/healthz", f"{DOOR}/mcp"):
            out = await sh(rig, f"curl -sS -m 5 {url}; echo rc=$?")
            assert "rc=52" in out or "rc=56" in out, out  # the deny listener hung up
        denied = [(e.kind, e.target) for e in rig.gate.events if not e.allowed]
        assert ("tcp", f"{GATE_ADDRESS}:984") in denied and ("tcp", f"{GATE_ADDRESS}:{port}") in denied

        url = await rig.open_server_door(f"{srv.url}/mcp")
        assert url == f"{DOOR}/mcp"
        again = await rig.open_server_door(f"{srv.url}/mcp")  # a second run in the same rig
        assert again == url
        headers = (f"-H 'Authorization: Bearer {srv.owner_token}' -H 'Content-Type: application/json' "
                   "-H 'Accept: application/json, text/event-stream'")  # fmt: skip
        listed = await sh(rig, curl("/mcp", "-X POST", headers, f"--data '{TOOLS_LIST}'"))
        assert listed.endswith("\n200\nrc=0\n") and '"name":"rig.open"' in listed, listed[-300:]
        unauthenticated = await sh(rig, curl("/mcp", "-X POST", f"--data '{TOOLS_LIST}'"))
        assert unauthenticated.endswith("\n401\nrc=0\n")  # the door adds no authority
        assert (await sh(rig, curl("/.well-known/oauth-protected-resource"))).endswith("\n200\nrc=0\n")
        for path in ("/rpc", "/auth/pair", "/healthz", "/", "/mcp/../rpc"):
            out = await sh(rig, curl(path, "--path-as-is", f"-H 'Authorization: Bearer {srv.owner_token}'"))
            assert out.endswith("\n403\nrc=0\n") and "the server door passes only the MCP endpoint" in out, out
        # One request per connection: the pipelined GET /healthz gets no answer.
        answered = await sh(rig, f"python3 -c \"{PIPELINED}\" '{TOOLS_LIST}' {srv.owner_token}")
        head, body = answered.split("\r\n\r\n", 1)
        assert head.startswith("HTTP/1.1 200 ") and "connection: close" in head.lower()
        assert json.loads(body)["result"]["tools"]  # the whole answer is the one request's: nothing after it
        refused = [(e.target, e.reason) for e in rig.gate.events if e.kind == "server" and not e.allowed]
        assert ("/auth/pair", "not the MCP endpoint") in refused and ("/rpc", "not the MCP endpoint") in refused

        await rig.close_server_door()
        assert (await sh(rig, curl("/mcp", "-X POST", headers, f"--data '{TOOLS_LIST}'"))).endswith("\n200\nrc=0\n")
        await rig.close_server_door()  # the last holder: shut again
        out = await sh(rig, f"curl -sS -m 5 {DOOR}/mcp; echo rc=$?")
        assert "rc=52" in out or "rc=56" in out, out  # the deny listener again: the door's rules are gone too
