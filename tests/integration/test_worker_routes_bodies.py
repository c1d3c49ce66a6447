"""The routes a ``hangar worker`` calls (its agents' credentials, its programs' forge tokens and their end) read
their body against the house's deadline (``hangar.httpkit.requests.BODY_TIMEOUT_S``): a body that arrives in
pieces and is whole inside it is read, one that stalls gets 408; and against their size (4,096 bytes, 413 past).

A real server in the test's process (so the deadline can be shortened), raw connections sending the bodies, a real
worker credential (the routes check it before reading the body)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from hangar.agents.worker_forge import FORGE_REVOKE_PATH, FORGE_TOKENS_PATH
from hangar.agents.worker_grants import BODY_MAX, GRANTS_PATH
from hangar.httpkit import requests
from hangar.pipelines import workercreds
from tests.integration.test_connection_limits import Conn
from tests.support.server import RunningServer, running_server

DEADLINE_S = 3.0


def bodies(ws: str) -> dict[str, dict[str, Any]]:
    """A well-formed body for each route, naming a claim nobody holds (read, then refused for what it says)."""
    try_key = f"pipeline:{uuid.uuid4()}/s#1.1"
    return {
        GRANTS_PATH: {"workspaceId": ws, "runId": str(uuid.uuid4()), "tryKey": try_key},
        FORGE_TOKENS_PATH: {"workspaceId": ws, "tryKey": try_key, "runId": str(uuid.uuid4())},
        FORGE_REVOKE_PATH: {"workspaceId": ws, "token": "ghs_" + "x" * 36},
    }


# What each route answers a whole body: no live claim (403); the end of a token asked through a workspace with no
# forge connected does nothing (200).
READ = {GRANTS_PATH: 403, FORGE_TOKENS_PATH: 403, FORGE_REVOKE_PATH: 200}


async def worker(s: RunningServer) -> str:
    return (await workercreds.mint(s.ctx.dbs.server, "pool", s.ctx.clock.now()))[1]


def head(path: str, credential: str, length: int) -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
        f"authorization: Bearer {credential}\r\ncontent-length: {length}\r\n\r\n"
    ).encode()


@pytest.mark.parametrize("path", [GRANTS_PATH, FORGE_TOKENS_PATH, FORGE_REVOKE_PATH])
async def test_a_workers_body_whole_inside_the_deadline_is_read_and_a_stalled_one_gets_408(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    monkeypatch.setattr(requests, "BODY_TIMEOUT_S", DEADLINE_S)
    async with running_server(tmp_path / "data") as s:
        credential = await worker(s)
        body = json.dumps(bodies(await s.new_workspace())[path]).encode()
        # In three pieces, the last a third of the deadline before it: read, and answered for what it says.
        prompt = await Conn.open(s.url, "127.0.0.1")
        await prompt.send_in_thirds(head(path, credential, len(body)), body, DEADLINE_S / 3)
        assert await prompt.status() == READ[path]
        # Left unfinished: 408 once the deadline passes.
        stalled = await Conn.open(s.url, "127.0.0.1")
        stalled.send(head(path, credential, len(body)) + body[: len(body) // 3])
        assert await stalled.status() == 408
        for conn in (prompt, stalled):
            conn.close()


@pytest.mark.parametrize("path", [GRANTS_PATH, FORGE_TOKENS_PATH, FORGE_REVOKE_PATH])
async def test_a_workers_body_at_its_size_is_read_and_one_byte_past_is_413(tmp_path: Path, path: str) -> None:
    async with running_server(tmp_path / "data") as s:
        credential = await worker(s)
        body = json.dumps(bodies(await s.new_workspace())[path])
        headers = {"Authorization": f"Bearer {credential}"}
        async with httpx.AsyncClient(timeout=30) as http:
            at = await http.post(f"{s.url}{path}", content=body.ljust(BODY_MAX), headers=headers)
            past = await http.post(f"{s.url}{path}", content=body.ljust(BODY_MAX + 1), headers=headers)
    assert at.status_code == READ[path]
    assert past.status_code == 413 and f"{BODY_MAX} bytes" in past.json()["error"]["message"]
