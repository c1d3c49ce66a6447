"""``agents.runMany``: one prompt posted once, every named agent run on it, over the real socket against a scripted
OpenAI-compatible server."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.rpc import RpcClient, RpcError
from tests.unit.agents.fake_openai import running_fake_openai, text
from tests.unit.agents.support import wait_run, workspace_server


async def _agent(client: RpcClient, ws: str, name: str, url: str, model: str) -> str:
    adapter = {"type": "openai", "baseUrl": url, "model": model, "apiKey": "sk-many"}
    return str((await client.call("agents.create", workspace_id=ws, name=name, adapter=adapter))["id"])


async def test_each_agent_runs_on_the_one_prompt(tmp_path: Path) -> None:
    async with running_fake_openai() as fake, workspace_server(tmp_path) as (srv, client, ws):
        space_id = (await client.call("spaces.create", workspace_id=ws, title="Many"))["id"]
        ada = await _agent(client, ws, "Ada", fake.url, "m-ada")
        bob = await _agent(client, ws, "Bob", fake.url, "m-bob")
        fake.script("m-ada", text("Ada here."))
        fake.script("m-bob", text("Bob here."))
        # The same agent named twice runs once.
        started = await client.call(
            "agents.runMany", workspace_id=ws, agentIds=[bob, ada, bob], spaceId=space_id, prompt="@Bob @Ada hello"
        )
        assert [r["agentId"] for r in started["runs"]] == [bob, ada]
        assert started["runIds"] == [r["runId"] for r in started["runs"]] == [r["id"] for r in started["runs"]]
        runs = [await wait_run(client, ws, run_id) for run_id in started["runIds"]]
        assert [r["outcome"] for r in runs] == ["ok", "ok"]
        assert {r["prompt"] for r in runs} == {"@Bob @Ada hello"}

        msgs = (await client.call("messages.list", workspace_id=ws, space_id=space_id))["messages"]
        assert [m["content"] for m in msgs if m["author"]["kind"] == "user"] == ["@Bob @Ada hello"]  # posted once
        assert sorted(m["content"] for m in msgs if m["author"]["kind"] == "agent") == ["Ada here.", "Bob here."]
        assert len(fake.bodies_for("m-ada")) == 1 and len(fake.bodies_for("m-bob")) == 1

        rows = await client.call("audit.list", workspace_id=ws, action="agents.runMany")
        assert [r["details"] for r in rows] == [{"runIds": started["runIds"], "agentIds": [bob, ada]}]
        assert "sk-many" not in str(rows)

        # Guests may not dispatch, as with agents.run.
        guest = await srv.new_user_token(ws, "guest", name="gus")
        async with RpcClient(srv.ws_url, guest) as g:
            with pytest.raises(RpcError) as info:
                await g.call("agents.runMany", workspace_id=ws, agentIds=[ada], spaceId=space_id, prompt="hi")
            assert info.value.code == "forbidden"


async def test_bad_requests_are_named_and_dispatch_nothing(tmp_path: Path) -> None:
    async with running_fake_openai() as fake, workspace_server(tmp_path) as (_srv, client, ws):
        space_id = (await client.call("spaces.create", workspace_id=ws, title="Many"))["id"]
        ada = await _agent(client, ws, "Ada", fake.url, "m-ada")
        for args, code, words in (
            ({"agentIds": []}, "invalid_args", "agentIds"),
            ({"agentIds": [ada, "nobody"]}, "not_found", "agentIds"),
            ({"agentIds": [ada], "prompt": "  "}, "invalid_args", "prompt"),
        ):
            with pytest.raises(RpcError) as info:
                await client.call("agents.runMany", workspace_id=ws, spaceId=space_id, **{"prompt": "hi", **args})
            assert info.value.code == code and words in info.value.message, info.value
        assert (await client.call("runs.list", workspace_id=ws))["runs"] == []
        assert (await client.call("messages.list", workspace_id=ws, space_id=space_id))["messages"] == []
