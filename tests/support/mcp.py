"""The official MCP SDK client on a running server: one session with the caller's bearer credential."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.support.server import RunningServer


@asynccontextmanager
async def mcp_session(srv: RunningServer, token: str, **client: Any) -> AsyncIterator[ClientSession]:
    http = httpx2.AsyncClient(headers={"authorization": f"Bearer {token}"}, timeout=30)
    async with (
        http,
        streamable_http_client(f"{srv.url}/mcp", http_client=http) as (read, write),
        ClientSession(read, write, **client) as session,
    ):
        await session.initialize()
        yield session


def payload(result: Any) -> dict[str, Any]:
    assert result.structured_content is not None
    return dict(result.structured_content)


@asynccontextmanager
async def mcp_client(srv: RunningServer, token: str, mode: str) -> AsyncIterator[Client]:
    """The SDK's high-level client; ``mode`` as the SDK takes it (``auto``: discover the newest revision)."""
    http = httpx2.AsyncClient(headers={"authorization": f"Bearer {token}"}, timeout=30)
    async with http, Client(streamable_http_client(f"{srv.url}/mcp", http_client=http), mode=mode) as client:
        yield client
