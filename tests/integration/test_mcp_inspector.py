"""The MCP Inspector's command-line client, a real MCP client of another implementation (TypeScript SDK), lists
the product's tools and calls one against a running server."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.peers.mcp_inspector import inspect
from tests.support.server import RunningServer, running_server


@pytest.fixture
async def srv(tmp_path: Path) -> AsyncIterator[RunningServer]:
    async with running_server(tmp_path / "data") as s:
        yield s


async def test_the_inspector_lists_the_tools_and_calls_one(srv: RunningServer) -> None:
    bearer = {"Authorization": f"Bearer {srv.owner_token}"}
    url = f"{srv.url}/mcp"
    code, listed = await asyncio.to_thread(inspect, url, "--method", "tools/list", headers=bearer)
    assert code == 0, listed
    names = {t["name"] for t in listed["tools"]}
    assert {"workspaces.create", "spaces.create", "rig.exec", "pipelines.runs.start"} <= names
    code, called = await asyncio.to_thread(
        inspect,
        url,
        "--method",
        "tools/call",
        "--tool-name",
        "workspaces.create",
        "--tool-arg",
        "name=Acme",
        headers=bearer,
    )
    assert code == 0 and called["isError"] is False, called
    assert called["structuredContent"]["name"] == "Acme"
    code, refused = await asyncio.to_thread(inspect, url, "--method", "tools/list")
    assert code != 0 and "unauthorized" in str(refused)
