"""Agent runs end to end over the RPC socket against a scripted OpenAI-compatible server on loopback."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from hangar.agents.tools.catalogue import DEFAULT_PRODUCT_TOOLS
from hangar.rpc.mcp.tools import openai_name
from tests.support.ports import free_port
from tests.support.rpc import RpcClient, RpcError
from tests.unit.agents.fake_openai import Reply, call, running_fake_openai, text
from tests.unit.agents.support import collect_until, wait_run, workspace_server


async def _setup(client: RpcClient, ws: str, fake_url: str, model: str, **adapter: Any) -> tuple[str, str]:
    space = await client.call("spaces.create", workspace_id=ws, title="Agent test")
    agent = await client.call(
        "agents.create",
        workspace_id=ws,
        name="Ada",
        systemPrompt="You are careful.",
        adapter={"type": "openai", "baseUrl": fake_url, "model": model, "apiKey": "sk-test-secret", **adapter},
    )
    return space["id"], agent["id"]


@pytest.mark.sqlite_only("reads workspace.db's bytes")
async def test_run_streams_reasoning_text_and_tool_calls(tmp_path: Path) -> None:
    async with running_fake_openai() as fake, workspace_server(tmp_path) as (srv, client, ws):
        space_id, agent_id = await _setup(client, ws, fake.url, "m1")
        folder = Path((await client.call("spaces.get", workspace_id=ws, space_id=space_id))["folder"])
        (folder / "notes.txt").write_text("the launch code is 1234")
        fake.script(
            "m1",
            Reply(reasoning="I should look at the files.", tool_calls=(call("list_files", {}).tool_calls[0],)),
            Reply(text="Reading.", tool_calls=(call("read_file", {"path": "notes.txt"}).tool_calls[0],)),
            call("post_message", {"content": "Found it."}),
            text("The code is 1234."),
        )
        watch = await client.watch("spaces.watch", workspace_id=ws, space_id=space_id)
        started = await client.call("agents.run", workspace_id=ws, agent_id=agent_id, space_id=space_id, prompt="Hi")
        frames = await collect_until(watch, "agents.runFinished")
        run = await wait_run(client, ws, started["runId"])

        assert run["outcome"] == "ok" and run["turns"] == 4 and run["error"] is None
        types = [f["type"] for f in frames]
        assert types[0] == "workspace.messagePosted"  # the prompt
        assert types.count("agents.turnStarted") == 4 and types.count("agents.turnFinished") == 4
        assert types.index("agents.reasoningStarted") < types.index("agents.reasoningFinished")
        assert types.index("agents.reasoningFinished") < types.index("agents.toolCallStarted")
        reasoning = next(f for f in frames if f["type"] == "agents.reasoningFinished")
        assert reasoning["payload"]["text"] == "I should look at the files."
        tool_done = [f["payload"] for f in frames if f["type"] == "agents.toolCallFinished"]
        assert [t["name"] for t in tool_done] == ["list_files", "read_file", "post_message"]
        assert "notes.txt" in tool_done[0]["result"] and tool_done[1]["result"] == "the launch code is 1234"
        deltas = "".join(f["payload"]["text"] for f in frames if f["type"] == "agents.textDelta")
        assert deltas == "Reading.The code is 1234."
        assert all(f["payload"]["runId"] == run["id"] for f in frames if f["type"].startswith("agents."))
        seqs = [f["seq"] for f in frames]
        assert seqs == sorted(seqs)

        msgs = (await client.call("messages.list", workspace_id=ws, space_id=space_id))["messages"]
        assert [(m["author"]["kind"], m["content"]) for m in msgs] == [
            ("user", "Hi"),
            ("agent", "Reading."),
            ("agent", "Found it."),
            ("agent", "The code is 1234."),
        ]
        assert msgs[-1]["author"]["id"] == agent_id and msgs[-1]["runId"] == run["id"]

        # The key reached the model server, and nowhere else.
        assert fake.headers[0]["authorization"] == "Bearer sk-test-secret"
        agent = await client.call("agents.get", workspace_id=ws, agent_id=agent_id)
        assert agent["adapter"]["hasApiKey"] is True and "apiKey" not in agent["adapter"]
        assert "sk-test-secret" not in json.dumps(await client.call("agents.list", workspace_id=ws))
        assert "sk-test-secret" in (srv.data_dir / "secrets.json").read_text()
        assert b"sk-test-secret" not in (srv.data_dir / ws / "workspace.db").read_bytes()

        # Tool results were fed back; the conversation carried system prompt, prompt and tool declarations.
        bodies = fake.bodies_for("m1")
        assert bodies[0]["stream"] is True and bodies[0]["messages"][0]["role"] == "system"
        assert "You are careful." in bodies[0]["messages"][0]["content"]
        assert bodies[0]["messages"][-1] == {"role": "user", "content": "Hi"}
        # The built-in tools, and the product's ops an agent gets when its configuration names none.
        product = {openai_name(n) for n in DEFAULT_PRODUCT_TOOLS}
        assert {t["function"]["name"] for t in bodies[0]["tools"]} == {
            "post_message",
            "list_files",
            "read_file",
        } | product
        third = bodies[2]["messages"]
        assert third[-1]["role"] == "tool" and third[-1]["content"] == "the launch code is 1234"
        assert third[-2]["content"] == "Reading." and third[-2]["tool_calls"][0]["function"]["name"] == "read_file"

        events = (await client.call("runs.events", workspace_id=ws, runId=run["id"]))["events"]
        assert events[0]["type"] == "agents.runStarted" and events[-1]["type"] == "agents.runFinished"


async def test_submit_output_is_validated_and_retried(tmp_path: Path) -> None:
    schema = {
        "type": "object",
        "properties": {"answer": {"type": "integer"}},
        "required": ["answer"],
    }
    async with running_fake_openai() as fake, workspace_server(tmp_path) as (srv, client, ws):
        space_id, agent_id = await _setup(client, ws, fake.url, "m2")
        fake.script("m2", call("submit_output", {"answer": "forty-two"}), call("submit_output", {"answer": 42}))
        started = await client.call(
            "agents.run", workspace_id=ws, agent_id=agent_id, space_id=space_id, prompt="Q?", outputSchema=schema
        )
        run = await wait_run(client, ws, started["runId"])
        assert run["outcome"] == "ok" and run["hasOutput"] is True and run["output"] == {"answer": 42}
        bodies = fake.bodies_for("m2")
        assert len(bodies) == 2  # an accepted submit_output ends the run without another model call
        submit = next(t for t in bodies[0]["tools"] if t["function"]["name"] == "submit_output")
        assert submit["function"]["parameters"] == schema
        refusal = bodies[1]["messages"][-1]
        assert refusal["role"] == "tool" and "$.answer: expected integer, got string" in refusal["content"]
        # The pipelines engine hears about the finished task with the harvested output (just after the run
        # record says finished, so that a resumed step reads the final record).
        for _ in range(200):
            done = await srv.ctx.bus.replay(ws, types=["pipeline.taskFinished"])
            if done:
                break
            await asyncio.sleep(0.02)
        assert [(e.payload["taskId"], e.payload["outcome"], e.payload["output"]) for e in done] == [
            (run["id"], "ok", {"answer": 42})
        ]


async def test_run_without_valid_output_says_why(tmp_path: Path) -> None:
    schema = {"type": "array", "items": {"type": "string"}}
    async with running_fake_openai() as fake, workspace_server(tmp_path) as (_srv, client, ws):
        space_id, agent_id = await _setup(client, ws, fake.url, "m3")
        fake.script("m3", call("submit_output", {"output": [1, 2]}), text("I give up."))
        started = await client.call(
            "agents.run", workspace_id=ws, agent_id=agent_id, space_id=space_id, prompt="List", outputSchema=schema
        )
        run = await wait_run(client, ws, started["runId"])
        assert run["outcome"] == "ok" and run["hasOutput"] is False
        assert run["outputError"] == "$[0]: expected string, got integer"


@pytest.mark.parametrize(
    ("reply", "adapter", "expected"),
    [
        (Reply(stall_seconds=3), {"timeoutSeconds": 0.4}, "did not answer within 0.4 s"),
        (Reply(status=500), {}, "answered HTTP 500: "),
        (Reply(garbage="data: this is not json\n\n"), {}, "sent something that is not JSON"),
        (Reply(garbage="<html>hello</html>\n"), {}, "sent no chat-completion chunks"),
        (Reply(garbage='data: {"choices": "nope"}\n\n'), {}, "without a `choices` list"),
    ],
    ids=["slow", "http-error", "not-json", "not-a-stream", "wrong-shape"],
)
async def test_bad_endpoint_fails_the_run_clearly(
    tmp_path: Path, reply: Reply, adapter: dict[str, Any], expected: str
) -> None:
    async with running_fake_openai() as fake, workspace_server(tmp_path) as (_srv, client, ws):
        space_id, agent_id = await _setup(client, ws, fake.url, "bad", **adapter)
        fake.script("bad", reply)
        started = await client.call("agents.run", workspace_id=ws, agent_id=agent_id, space_id=space_id, prompt="x")
        run = await wait_run(client, ws, started["runId"])
        assert run["outcome"] == "failed" and expected in run["error"]
        assert "sk-test-secret" not in run["error"]
        events = (await client.call("runs.events", workspace_id=ws, runId=run["id"]))["events"]
        finished = [e["payload"] for e in events if e["type"] == "agents.turnFinished"]
        assert finished == [{**finished[0], "outcome": "failed", "error": run["error"]}]
        # The space and its history are intact, and the next run works.
        msgs = (await client.call("messages.list", workspace_id=ws, space_id=space_id))["messages"]
        assert [m["content"] for m in msgs] == ["x"]
        fake.script("bad", text("back"))
        again = await client.call("agents.run", workspace_id=ws, agent_id=agent_id, space_id=space_id, prompt="y")
        assert (await wait_run(client, ws, again["runId"]))["outcome"] == "ok"


async def test_unreachable_endpoint(tmp_path: Path) -> None:
    async with workspace_server(tmp_path) as (_srv, client, ws):
        port = free_port()  # a port nothing listens on
        space_id, agent_id = await _setup(client, ws, f"http://127.0.0.1:{port}/v1", "down")
        started = await client.call("agents.run", workspace_id=ws, agent_id=agent_id, space_id=space_id, prompt="x")
        run = await wait_run(client, ws, started["runId"])
        assert run["outcome"] == "failed" and f"127.0.0.1:{port}/v1 is unreachable" in run["error"]


async def test_turn_limit_and_non_streamed_answers(tmp_path: Path) -> None:
    async with running_fake_openai() as fake, workspace_server(tmp_path) as (_srv, client, ws):
        space_id, agent_id = await _setup(client, ws, fake.url, "loop", maxTurns=2)
        fake.script("loop", call("list_files", {}), call("list_files", {}), call("list_files", {}))
        started = await client.call("agents.run", workspace_id=ws, agent_id=agent_id, space_id=space_id, prompt="x")
        run = await wait_run(client, ws, started["runId"])
        assert run["outcome"] == "turnLimit" and run["turns"] == 2 and "turn limit" in run["error"]
        assert len(fake.bodies_for("loop")) == 2

        fake.script("loop", Reply(text="whole answer", whole_json=True))
        started = await client.call("agents.run", workspace_id=ws, agent_id=agent_id, space_id=space_id, prompt="y")
        run = await wait_run(client, ws, started["runId"])
        assert run["outcome"] == "ok"
        msgs = (await client.call("messages.list", workspace_id=ws, space_id=space_id))["messages"]
        assert msgs[-1]["content"] == "whole answer"


async def test_interrupt_a_streaming_run(tmp_path: Path) -> None:
    async with running_fake_openai() as fake, workspace_server(tmp_path) as (_srv, client, ws):
        space_id, agent_id = await _setup(client, ws, fake.url, "slow")
        fake.script("slow", Reply(text="word " * 200, chunk_size=5, delay_between_chunks=0.05))
        watch = await client.watch("spaces.watch", workspace_id=ws, space_id=space_id)
        started = await client.call("agents.run", workspace_id=ws, agent_id=agent_id, space_id=space_id, prompt="x")
        await collect_until(watch, "agents.textDelta")
        run = await client.call("runs.interrupt", workspace_id=ws, runId=started["runId"])
        assert run["status"] == "finished" and run["outcome"] == "interrupted"
        frames = await collect_until(watch, "agents.runFinished")
        turn_end = next(f for f in frames if f["type"] == "agents.turnFinished")
        assert turn_end["payload"]["outcome"] == "interrupted"
        again = await client.call("runs.interrupt", workspace_id=ws, runId=started["runId"])
        assert again["outcome"] == "interrupted"


async def test_bad_agent_input_is_refused_with_the_field(tmp_path: Path) -> None:
    async with workspace_server(tmp_path) as (_srv, client, ws):
        space = await client.call("spaces.create", workspace_id=ws, title="s")
        with pytest.raises(RpcError) as err:
            await client.call(
                "agents.create",
                workspace_id=ws,
                name="a",
                adapter={"type": "openai", "baseUrl": "ftp://x", "model": "m"},
            )
        assert err.value.code == "invalid_args" and "adapter.baseUrl" in err.value.message
        with pytest.raises(RpcError) as err:
            await client.call("agents.create", workspace_id=ws, name="a", adapter={"type": "telepathy"})
        assert err.value.code == "invalid_args" and "adapter.type" in err.value.message
        with pytest.raises(RpcError) as err:
            await client.call(
                "agents.run", workspace_id=ws, agent_id="no-such-agent", space_id=space["id"], prompt="hi"
            )
        assert err.value.code == "not_found" and "no-such-agent" in err.value.message
        agent = await client.call(
            "agents.create", workspace_id=ws, name="a", adapter={"type": "command", "argv": ["cat"]}
        )
        with pytest.raises(RpcError) as err:
            await client.call(
                "agents.run",
                workspace_id=ws,
                agent_id=agent["id"],
                space_id=space["id"],
                prompt="hi",
                outputSchema={"type": "object", "oneOf": []},
            )
        assert err.value.code == "invalid_args" and "oneOf" in err.value.message
        # Nothing was recorded by the refused dispatches.
        assert (await client.call("runs.list", workspace_id=ws))["runs"] == []
        assert (await client.call("messages.list", workspace_id=ws, space_id=space["id"]))["messages"] == []


async def test_concurrent_runs_lose_no_event(tmp_path: Path) -> None:
    """Twenty runs at once in one workspace: each run's live frames are exactly its persisted events, in a
    complete sequence, and carry the model's whole text (deltas may be merged when the database is busy)."""
    words = "alpha beta gamma delta epsilon zeta eta theta "
    async with running_fake_openai() as fake, workspace_server(tmp_path) as (_srv, client, ws):
        fake.default = Reply(text=words, chunk_size=6)
        space_id, agent_id = await _setup(client, ws, fake.url, "many")
        watch = await client.watch("spaces.watch", workspace_id=ws, space_id=space_id)
        started = await asyncio.gather(
            *(
                client.call("agents.run", workspace_id=ws, agent_id=agent_id, space_id=space_id, prompt=f"p{i}")
                for i in range(20)
            )
        )
        run_ids = {s["runId"] for s in started}
        frames: dict[str, list[dict[str, Any]]] = {r: [] for r in run_ids}
        done: set[str] = set()
        while done != run_ids:
            frame = await watch.next(30)
            rid = frame["payload"].get("runId")
            if rid in frames:
                frames[rid].append(frame)
                if frame["type"] == "agents.runFinished":
                    done.add(rid)
        for rid, got in frames.items():
            persisted = (await client.call("runs.events", workspace_id=ws, runId=rid))["events"]
            assert [f["seq"] for f in got] == [e["seq"] for e in persisted]
            types = [f["type"] for f in got]
            assert types[:2] == ["agents.runStarted", "agents.turnStarted"]
            assert types[-2:] == ["agents.turnFinished", "agents.runFinished"]
            assert "".join(f["payload"]["text"] for f in got if f["type"] == "agents.textDelta") == words
        msgs = (await client.call("messages.list", workspace_id=ws, space_id=space_id))["messages"]
        assert sorted(m["content"] for m in msgs if m["author"]["kind"] == "user") == sorted(f"p{i}" for i in range(20))
        assert sum(1 for m in msgs if m["author"]["kind"] == "agent" and m["content"] == words.strip()) == 20


async def test_interrupt_right_after_dispatch(tmp_path: Path) -> None:
    """An interrupt that lands before the run has called the model ends it without calling the model."""
    from hangar.agents import AgentRunner
    from hangar.workspace import Author

    async with running_fake_openai() as fake, workspace_server(tmp_path) as (srv, client, ws):
        space_id, agent_id = await _setup(client, ws, fake.url, "early")
        runner = srv.ctx.service(AgentRunner)
        run = await runner.dispatch(
            ws, agent_id=agent_id, space_id=space_id, prompt="x", dispatched_by="test", prompt_author=Author.system()
        )
        stopped = await runner.interrupt(ws, run.id)
        assert (stopped.status, stopped.outcome, stopped.error) == (
            "finished",
            "interrupted",
            "the run was interrupted",
        )
        assert fake.bodies_for("early") == []
        events = [e["type"] for e in (await client.call("runs.events", workspace_id=ws, runId=run.id))["events"]]
        # Under load the adapter may have opened its turn before the interrupt landed; it never got further.
        assert events[0] == "agents.runStarted" and events[-1] == "agents.runFinished"
        assert set(events[1:-1]) <= {"agents.turnStarted", "agents.turnFinished"}, events


async def test_a_run_dispatched_under_a_chosen_id_is_dispatched_once(tmp_path: Path) -> None:
    """``run_ids``: a caller that must dispatch once (the chat bridge) chooses the id; a second dispatch under it
    is a ``Conflict`` recording nothing (no prompt, no run, no lock kept), and one id per agent is required."""
    from hangar.agents import AgentRunner
    from hangar.errors import Conflict, InvalidArgs
    from hangar.workspace import Author

    async with running_fake_openai() as fake, workspace_server(tmp_path) as (srv, client, ws):
        space_id, agent_id = await _setup(client, ws, fake.url, "chosen")
        fake.script("chosen", text("once"))
        runner = srv.ctx.service(AgentRunner)
        chosen = "0c6f7b2a-1d3e-5f40-8a9b-7c6d5e4f3a2b"
        asked = {"space_id": space_id, "prompt": "x", "dispatched_by": "test", "prompt_author": Author.system()}
        run = await runner.dispatch(ws, agent_id=agent_id, run_ids=[chosen], **asked)  # type: ignore[arg-type]
        assert run.id == chosen
        with pytest.raises(Conflict, match="recorded already"):
            await runner.dispatch(ws, agent_id=agent_id, run_ids=[chosen], **asked)  # type: ignore[arg-type]
        with pytest.raises(InvalidArgs, match="one run id per agent"):
            await runner.dispatch(ws, agent_id=agent_id, run_ids=[], **asked)  # type: ignore[arg-type]
        runs = (await client.call("runs.list", workspace_id=ws))["runs"]
        assert [r["id"] for r in runs] == [chosen]
        msgs = (await client.call("messages.list", workspace_id=ws, space_id=space_id))["messages"]
        assert [m["content"] for m in msgs if m["author"]["kind"] != "agent"] == ["x"]
