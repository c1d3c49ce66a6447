"""Kept answers of the docs tool server (``hangar.site.answers``): a repeated tools/list or tools/call is answered
with the bytes the MCP SDK gave the first time, with the new request's id; errors are never kept; the protocol
revision and the origin are part of the key; the cache's bounds hold on both sides."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from hangar.site import answers
from hangar.site.app import website_app

HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


class Site:
    def __init__(self, app: Any, client: httpx.AsyncClient) -> None:
        self.app, self.client = app, client
        self.tools = app.state.docs_tools
        # Answers worked out rather than taken from the cache: by the SDK, or by the light path that writes the
        # SDK's bytes for a call of a kind the SDK answered before (hangar.site.direct).
        self.worked_out = 0
        handle = self.tools.manager.handle_request
        direct = self.tools.direct.answer

        async def counted(*args: Any) -> None:
            self.worked_out += 1
            await handle(*args)

        def counted_direct(*args: Any) -> bytes | None:
            found = direct(*args)
            self.worked_out += found is not None
            return found

        self.tools.manager.handle_request = counted
        self.tools.direct.answer = counted_direct

    async def post(self, body: dict[str, Any], **headers: str) -> httpx.Response:
        return await self.client.post("/mcp", content=json.dumps(body), headers={**HEADERS, **headers})


@contextlib.asynccontextmanager
async def docs_site() -> AsyncIterator[Site]:
    app = website_app()
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://docs.test") as c,
    ):
        yield Site(app, c)


def search(id_: object, query: str = "pair a device", **more: Any) -> dict[str, Any]:
    args = {"query": query, "limit": 3, **more}
    return {"jsonrpc": "2.0", "id": id_, "method": "tools/call", "params": {"name": "search_pages", "arguments": args}}


async def test_a_repeated_call_gets_the_sdks_bytes_with_its_own_id_without_the_sdk() -> None:
    async with docs_site() as site:
        first = await site.post(search(1))
        assert site.worked_out == 1 and len(site.tools.answers) == 1
        again = await site.post(search("two"))
        assert site.worked_out == 1  # answered from what was kept
        assert again.content == first.content.replace(b'"id":1,', b'"id":"two",', 1)
        assert again.headers["content-type"] == "application/json"
        assert int(again.headers["content-length"]) == len(again.content)
        for id_ in (None, 2.5, 0, ""):  # ids the SDK itself takes only with a stand-in are echoed as given
            assert (await site.post(search(id_))).json()["id"] == id_
        assert site.worked_out == 1
        listed = [await site.post({"jsonrpc": "2.0", "id": i, "method": "tools/list"}) for i in (1, 2)]
        assert listed[1].content == listed[0].content.replace(b'"id":1,', b'"id":2,', 1) and site.worked_out == 2


async def test_the_key_holds_the_arguments_the_revision_and_the_origin() -> None:
    async with docs_site() as site:
        await site.post(search(1))
        other = await site.post(search(1, query="pipelines retry"))
        assert site.worked_out == 2 and "pipelines" in other.text
        older = await site.post(search(1), **{"MCP-Protocol-Version": "2025-03-26"})
        assert site.worked_out == 3 and older.json()["result"]["content"]
        elsewhere = await site.post(search(1), Host="mirror.example")
        assert site.worked_out == 4
        urls = [r["url"] for r in elsewhere.json()["result"]["structuredContent"]["results"]]
        assert urls and all(u.startswith("http://mirror.example/") for u in urls)  # never docs.test's answer


async def test_errors_and_stand_in_ids_are_not_kept() -> None:
    async with docs_site() as site:
        bad = search(1, sudo=True)
        for _ in range(2):
            assert (await site.post(bad)).json()["error"]["code"] == -32602
        assert site.worked_out == 2 and len(site.tools.answers) == 0
        await site.post(search(None))  # the SDK saw a stand-in id: its bytes were rewritten, so not kept
        assert len(site.tools.answers) == 0
        await site.post(search(7))
        assert len(site.tools.answers) == 1


async def test_at_most_the_entries_are_kept_least_recently_used_out_first() -> None:
    async with docs_site() as site:
        site.tools.answers.entries = 2
        for q in ("alpha", "beta"):
            await site.post(search(1, query=q))
        assert len(site.tools.answers) == 2 and site.worked_out == 2
        await site.post(search(1, query="alpha"))  # kept, and now the most recently used
        assert site.worked_out == 2
        await site.post(search(1, query="gamma"))  # one past the bound: beta goes
        assert len(site.tools.answers) == 2 and site.worked_out == 3
        await site.post(search(1, query="alpha"))
        assert site.worked_out == 3
        await site.post(search(1, query="beta"))
        assert site.worked_out == 4


async def test_a_key_past_the_size_bound_is_not_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    async with docs_site() as site:
        key = answers.AnswerCache.key_of(search(1), None, "http://docs.test")
        assert key is not None
        monkeypatch.setattr(answers, "CACHE_KEY_MAX", len(key))
        await site.post(search(1))
        assert len(site.tools.answers) == 1  # at the bound: kept
        monkeypatch.setattr(answers, "CACHE_KEY_MAX", len(key) - 1)
        await site.post(search(1, query="pair a devicd"))  # same length, one past the bound now
        assert len(site.tools.answers) == 1
