"""The light path of the docs tool server's tools/call (``hangar.site.direct``): a kind of call (revision, origin,
tool) is answered without the SDK only after the SDK's own answer to one of its calls was byte for byte what the
light path writes; its answers are then the SDK's bytes for every revision; errors are always the SDK's; a kind
whose bytes differ stays with the SDK; the number of kinds remembered holds on both sides of its bound."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from hangar.site import direct
from hangar.site.app import website_app
from hangar.site.mcp_server import PROTOCOL_VERSIONS

HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


class Site:
    def __init__(self, app: Any, client: httpx.AsyncClient) -> None:
        self.tools = app.state.docs_tools
        self.http = client
        self.sdk_calls = 0
        handle = self.tools.manager.handle_request

        async def counted(*args: Any) -> None:
            self.sdk_calls += 1
            await handle(*args)

        self.tools.manager.handle_request = counted

    async def post(self, body: dict[str, Any], **headers: str) -> httpx.Response:
        # Distinct queries throughout: the answer cache (hangar.site.answers) never answers here.
        return await self.http.post("/mcp", content=json.dumps(body), headers={**HEADERS, **headers})


@contextlib.asynccontextmanager
async def docs_site() -> AsyncIterator[Site]:
    app = website_app()
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://docs.test") as c,
    ):
        yield Site(app, c)


def call(id_: object, tool: str = "search_pages", **args: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "method": "tools/call", "params": {"name": tool, "arguments": args}}


CALLS = (
    ("search_pages", {"query": "pipeline retry", "limit": 3}, {"query": "rig browser", "limit": 5}),
    ("get_page_markdown", {"slug": "manual/install"}, {"slug": "manual/concepts/pipelines"}),
    ("list_pages", {}, {"section": "manual"}),
)


@pytest.mark.parametrize("revision", [None, *PROTOCOL_VERSIONS])
async def test_after_the_sdk_proved_a_kind_its_calls_get_the_sdks_bytes_without_it(revision: str | None) -> None:
    named = {"MCP-Protocol-Version": revision} if revision else {}
    async with docs_site() as light, docs_site() as sdk_only:
        sdk_only.tools.direct.answer = lambda *args: None  # this site's answers are all the SDK's
        for tool, first, second in CALLS:
            before = light.sdk_calls
            proving = await light.post(call(1, tool, **first), **named)
            assert proving.status_code == 200 and light.sdk_calls == before + 1
            fast = await light.post(call("b", tool, **second), **named)
            assert light.sdk_calls == before + 1, tool  # answered without the SDK
            slow = await sdk_only.post(call("b", tool, **second), **named)
            assert fast.content == slow.content, tool
            assert fast.headers["content-type"] == slow.headers["content-type"] == "application/json"
            assert int(fast.headers["content-length"]) == len(fast.content)


async def test_errors_of_a_proven_kind_are_the_sdks() -> None:
    async with docs_site() as site:
        await site.post(call(1, query="pipeline"))
        calls = site.sdk_calls
        for bad in (call(2, query=""), call(3, query="x", sudo=True), call(4, limit=3)):
            answer = (await site.post(bad)).json()
            assert answer["error"]["code"] == -32602 and "search_pages" in answer["error"]["message"]
        unknown = (await site.post(call(5, "no_such_tool", query="x"))).json()
        assert unknown["error"]["code"] == -32602 and "no_such_tool" in unknown["error"]["message"]
        assert site.sdk_calls == calls + 4


async def test_a_kind_whose_bytes_differ_stays_with_the_sdk(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(direct, "render", lambda result, id_, revision: b'{"not":"the sdk"}')
    async with docs_site() as site:
        for n, query in enumerate(("pipeline", "rig", "backup")):
            answer = await site.post(call(n, query=query))
            assert answer.json()["result"]["structuredContent"]["query"] == query
        assert site.sdk_calls == 3
        assert list(site.tools.direct._proven.values()) == [False]


async def test_kinds_remembered_hold_their_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(direct, "KINDS_MAX", 2)
    async with docs_site() as site:
        for host in ("a.example", "b.example"):  # the origin is part of the kind
            await site.post(call(1, query="pipeline"), Host=host)
            await site.post(call(2, query="rig"), Host=host)
        assert site.sdk_calls == 2 and len(site.tools.direct._proven) == 2  # at the bound: both kinds light
        await site.post(call(1, query="pipeline"), Host="c.example")
        await site.post(call(2, query="rig"), Host="c.example")
        assert site.sdk_calls == 4 and len(site.tools.direct._proven) == 2  # one past it: the SDK answers
