"""The docs tool server, driven by the official MCP client session and by raw HTTP for the error contract."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from hangar.httpkit import requests
from hangar.site.slugs import page_slugs
from tests.integration.site_env import RunningSite, serve_site

HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


@pytest.fixture(scope="module")
def site() -> Iterator[RunningSite]:
    with serve_site() as running:
        yield running


def _structured(result: Any) -> dict[str, Any]:
    assert not result.is_error
    data = result.structured_content
    assert isinstance(data, dict)
    return data


@pytest.mark.parametrize("path", ["/mcp", "/.well-known/mcp"])
async def test_official_client_session(site: RunningSite, path: str) -> None:
    async with streamable_http_client(site.url + path) as (read, write), ClientSession(read, write) as session:
        init = await session.initialize()
        assert init.server_info.name == "hangar-docs"
        await session.send_ping()

        tools = await session.list_tools()
        assert {t.name for t in tools.tools} == {"list_pages", "get_page_markdown", "search_pages"}

        listed = _structured(await session.call_tool("list_pages", {}))
        assert listed["count"] == len(page_slugs())
        assert {p["slug"] for p in listed["pages"]} == set(page_slugs())
        guides = _structured(await session.call_tool("list_pages", {"section": "guides"}))
        assert guides["count"] == 62 and all(p["slug"].startswith("manual/guides") for p in guides["pages"])

        page = await session.call_tool("get_page_markdown", {"slug": "manual/install"})
        text = page.content[0].text  # type: ignore[union-attr]
        assert text.startswith("# Install\n")
        assert text.rstrip().endswith(f"Canonical URL: {site.url}/manual/install")
        by_path = await session.call_tool("get_page_markdown", {"path": "/manual/install.md"})
        assert by_path.content[0].text == text  # type: ignore[union-attr]
        home = _structured(await session.call_tool("get_page_markdown", {"slug": ""}))
        assert home["path"] == "/"

        found = _structured(await session.call_tool("search_pages", {"query": "pair a device", "limit": 3}))
        assert found["results"][0]["slug"] == "manual/guides/pair-a-device"
        assert len(found["results"]) <= 3 and "**" in found["results"][0]["snippet"]
        assert found["results"][0]["url"] == f"{site.url}/manual/guides/pair-a-device"


async def test_tool_errors_through_the_client(site: RunningSite) -> None:
    async with streamable_http_client(site.url + "/mcp") as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        with pytest.raises(MCPError) as unknown:
            await session.call_tool("delete_everything", {})
        assert unknown.value.code == -32602 and "delete_everything" in unknown.value.error.message
        with pytest.raises(MCPError) as wrong_type:
            await session.call_tool("search_pages", {"query": 42})
        assert wrong_type.value.code == -32602 and "`query`" in wrong_type.value.error.message
        with pytest.raises(MCPError) as extra:
            await session.call_tool("list_pages", {"section": "all", "sudo": True})
        assert "`sudo`" in extra.value.error.message
        with pytest.raises(MCPError) as both:
            await session.call_tool("get_page_markdown", {"slug": "manual", "path": "/manual"})
        assert "exactly one" in both.value.error.message
        with pytest.raises(MCPError):
            await session.call_tool("search_pages", {"query": "x", "limit": 500})
        missing = await session.call_tool("get_page_markdown", {"slug": "manual/../etc/passwd"})
        assert missing.is_error and "list_pages" in missing.content[0].text  # type: ignore[union-attr]


def _post(site: RunningSite, body: bytes | str, headers: dict[str, str] | None = None) -> httpx.Response:
    content = body.encode() if isinstance(body, str) else body
    return httpx.post(site.url + "/mcp", content=content, headers=headers or HEADERS, timeout=10)


def _rpc(method: str, params: object = None, id_: object = 1) -> str:
    msg: dict[str, object] = {"jsonrpc": "2.0", "method": method, "id": id_}
    if params is not None:
        msg["params"] = params
    return json.dumps(msg)


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ("{not json", 400, -32700),
        ("", 400, -32700),
        ("[]", 400, -32600),
        ('[{"jsonrpc":"2.0","id":1,"method":"ping"}]', 400, -32600),
        ('"ping"', 400, -32600),
        ('{"jsonrpc":"1.0","id":1,"method":"ping"}', 400, -32600),
        ('{"id":1,"method":"ping"}', 400, -32600),
        ('{"jsonrpc":"2.0","id":1}', 400, -32600),
        ('{"jsonrpc":"2.0","id":1,"method":7}', 400, -32600),
        ('{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}', 400, -32600),
        ('{"jsonrpc":"2.0","id":true,"method":"ping"}', 400, -32600),
        ('{"jsonrpc":"2.0","id":1,"method":"ping","params":[1]}', 400, -32600),
        (_rpc("resources/list"), 200, -32601),
        (_rpc("tools/delete"), 200, -32601),
        (_rpc("tools/call", {"arguments": {}}), 200, -32602),
        (_rpc("tools/call", {"name": "search_pages", "arguments": "q"}), 200, -32602),
        (_rpc("tools/call", {"name": "search_pages", "arguments": {"query": ""}}), 200, -32602),
        (_rpc("tools/call", {"name": "search_pages", "arguments": {"query": "x", "limit": "5"}}), 200, -32602),
        (_rpc("tools/call", {"name": "list_pages", "arguments": {"section": "secret"}}), 200, -32602),
        (_rpc("initialize"), 200, -32602),
    ],
)
def test_envelope_and_params_errors(site: RunningSite, body: str, status: int, code: int) -> None:
    r = _post(site, body)
    assert r.status_code == status
    assert r.headers["content-type"] == "application/json"
    doc = r.json()
    assert doc["jsonrpc"] == "2.0" and doc["error"]["code"] == code and doc["error"]["message"]
    assert "result" not in doc


@pytest.mark.parametrize("method", ["notifications/initialized", "notifications/cancelled", "notifications/x"])
def test_notifications_get_202_and_no_body(site: RunningSite, method: str) -> None:
    r = _post(site, json.dumps({"jsonrpc": "2.0", "method": method}))
    assert r.status_code == 202 and r.content == b""


@pytest.mark.parametrize("id_", [None, "abc", 0, 12.5])
def test_ids_are_echoed(site: RunningSite, id_: object) -> None:
    r = _post(site, _rpc("ping", id_=id_))
    assert r.status_code == 200
    assert r.json() == {"jsonrpc": "2.0", "id": id_, "result": {}}


def test_stateless_requests_need_no_initialize(site: RunningSite) -> None:
    r = _post(site, _rpc("tools/call", {"name": "search_pages", "arguments": {"query": "egress gate"}}))
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    result = r.json()["result"]
    assert result["structuredContent"]["results"][0]["slug"].startswith("manual/")
    assert "mcp-session-id" not in r.headers


def test_transport_errors(site: RunningSite) -> None:
    body = _rpc("ping")
    no_accept = _post(site, body, {"Content-Type": "application/json", "Accept": "text/html"})
    assert no_accept.status_code == 406 and no_accept.json()["error"]["code"] == -32600
    form = _post(site, body, {"Content-Type": "text/plain", "Accept": "application/json"})
    assert form.status_code == 415
    huge = _post(site, b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"' + b"a" * (2 << 20) + b'"}}')
    assert huge.status_code == 413 and huge.json()["error"]["code"] == -32600
    for unsupported in ("1999-01-01", "2026-07-28"):
        version = _post(site, body, {**HEADERS, "MCP-Protocol-Version": unsupported})
        assert version.status_code == 400 and "2025-06-18" in version.json()["error"]["message"]
    supported = _post(site, body, {**HEADERS, "MCP-Protocol-Version": "2025-06-18"})
    assert supported.status_code == 200 and supported.json()["result"] == {}


def test_both_paths_are_identical(site: RunningSite) -> None:
    body = _rpc("tools/list")
    a = httpx.post(site.url + "/mcp", content=body, headers=HEADERS).json()
    b = httpx.post(site.url + "/.well-known/mcp", content=body, headers=HEADERS).json()
    assert a == b


def _answer_status(conn: socket.socket) -> int:
    """The status of the answer on a raw connection (its first line)."""
    conn.settimeout(30)  # a bound against hangs only
    received = b""
    while b"\r\n" not in received:
        chunk = conn.recv(4096)
        if not chunk:
            raise ConnectionError(f"closed before an answer: {received!r}")
        received += chunk
    return int(received.split(b" ", 2)[1])


def test_a_body_whole_inside_the_deadline_is_read_and_a_stalled_one_gets_408(
    site: RunningSite, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The gate reads a body against the house's deadline (``BODY_TIMEOUT_S``, shortened here)."""
    deadline = 3.0
    monkeypatch.setattr(requests, "BODY_TIMEOUT_S", deadline)
    body = _rpc("ping").encode()
    head = (
        f"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        f"accept: application/json\r\ncontent-length: {len(body)}\r\n\r\n"
    ).encode()
    third = len(body) // 3
    # In three pieces, the last a third of the deadline before it: read and answered.
    with socket.create_connection(("127.0.0.1", site.port)) as prompt:
        prompt.sendall(head + body[:third])
        time.sleep(deadline / 3)
        prompt.sendall(body[third : 2 * third])
        time.sleep(deadline / 3)
        prompt.sendall(body[2 * third :])
        assert _answer_status(prompt) == 200
    # Left unfinished: 408 once the deadline passes.
    with socket.create_connection(("127.0.0.1", site.port)) as stalled:
        stalled.sendall(head + body[:third])
        assert _answer_status(stalled) == 408
