"""The agent and workspace pipeline bodies inside real pipeline runs, with real agent runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_workspace_repos import make_repo
from tests.support.confined import CLI_AGENT
from tests.support.rpc import RpcClient
from tests.support.runs import assert_completed
from tests.unit.agents.fake_openai import Reply, call, running_fake_openai, text
from tests.unit.agents.support import pipelines_server, template, wait_run

SCRIPT = str(Path(__file__).parent.parent / "unit" / "agents" / "scripts" / "cli_agent.py")
SUMMARY = {"type": "object", "properties": {"summary": {"type": "string"}}, "required": ["summary"]}


async def _openai_agent(client: RpcClient, ws: str, url: str, model: str, name: str = "Ada") -> str:
    adapter = {"type": "openai", "baseUrl": url, "model": model}
    return str((await client.call("agents.create", workspace_id=ws, name=name, adapter=adapter))["id"])


async def _cli_agent(client: RpcClient, ws: str, name: str) -> str:
    adapter = {"type": "command", "argv": [*CLI_AGENT]}
    return str((await client.call("agents.create", workspace_id=ws, name=name, adapter=adapter))["id"])


async def test_create_space_prompt_agent_and_post_message(tmp_path: Path) -> None:
    src = make_repo(tmp_path / "src", "app")
    async with running_fake_openai() as fake, pipelines_server(tmp_path) as (_srv, client, ws, pipes):
        await client.call("repos.register", workspace_id=ws, path=str(src))
        agent = await _openai_agent(client, ws, fake.url, "p1")
        fake.script("p1", call("submit_output", {"summary": "all good"}))
        raw = template(
            {
                "id": "open",
                "body": "messaging.createSpace",
                "config": {
                    "outputKey": "space_id",
                    "repoIds": ["app"],
                    "extras": {"createConversation": True, "conversationTitle": "Review {{topic}}", "mode": "plan"},
                },
            },
            {
                "id": "ask",
                "body": "conversation.promptAgent",
                "config": {
                    "agentId": agent,
                    "prompt": "Summarise {{topic}}",
                    "outputSchema": SUMMARY,
                    "outputKey": "summary",
                    "label": "Ask Ada",
                },
            },
            {"id": "post", "body": "messaging.postMessage"},
        )
        snap = await pipes.run(raw, {"topic": "the launch", "content": "Summary posted."})
        assert_completed(snap)
        state = snap["state"]
        assert state["summary"] == {"summary": "all good"}
        space_id = state["space_id"]
        assert state["pipeline_space_id"] == space_id and state["posted_space_id"] == space_id
        space = await client.call("spaces.get", workspace_id=ws, space_id=space_id)
        assert (space["title"], space["mode"], space["hidden"]) == ("Review the launch", "plan", False)
        assert [r["repoName"] for r in space["repos"]] == ["app"]
        assert (Path(space["folder"]) / "app" / "README.md").exists()
        msgs = (await client.call("messages.list", workspace_id=ws, space_id=space_id))["messages"]
        assert [(m["author"]["kind"], m["author"]["name"], m["content"]) for m in msgs] == [
            ("system", "Ask Ada", "Summarise the launch"),
            ("system", "post", "Summary posted."),
        ]
        runs = (await client.call("runs.list", workspace_id=ws))["runs"]
        assert runs[0]["dispatchedBy"] == f"pipeline:{snap['runId']}/ask#1"


async def test_prompt_agent_failures_fail_the_step(tmp_path: Path) -> None:
    async with running_fake_openai() as fake, pipelines_server(tmp_path) as (_srv, client, ws, pipes):
        agent = await _openai_agent(client, ws, fake.url, "p2")
        space = await client.call("spaces.create", workspace_id=ws, title="existing")
        step = {
            "id": "ask",
            "body": "conversation.promptAgent",
            "config": {"agentId": agent, "prompt": "go", "outputSchema": SUMMARY, "extras": {"spaceId": "{{sp}}"}},
        }
        fake.script("p2", Reply(status=503))
        snap = await pipes.run(template(step), {"sp": space["id"]})
        assert snap["status"] == "failed"
        error = snap["steps"]["ask"]["error"]
        assert error.startswith("the run of agent 'Ada' ended failed: the model endpoint answered HTTP 503"), error

        fake.script("p2", text("no tool for you"))
        snap = await pipes.run(template(step), {"sp": space["id"]})
        assert snap["steps"]["ask"]["error"].endswith(
            "ended without valid output: the agent did not call submit_output"
        )

        missing = {**step, "config": {**step["config"], "agentId": "ghost"}}
        snap = await pipes.run(template(missing), {"sp": space["id"]})
        assert snap["steps"]["ask"]["error"] == "agentId: agent ghost does not exist in this workspace"

        # Without extras.spaceId and without a messaging.createSpace step, the agent step has nowhere to go.
        roomless = {**step, "config": {"agentId": agent, "prompt": "go"}}
        snap = await pipes.run(template(roomless))
        assert "has no space to work in" in snap["steps"]["ask"]["error"]
        # The space's history is intact: the two prompts and the one answer.
        msgs = (await client.call("messages.list", workspace_id=ws, space_id=space["id"]))["messages"]
        assert [m["content"] for m in msgs] == ["go", "go", "no tool for you"]


@pytest.mark.packs("terminal")
async def test_team_dispatch_fans_out_in_one_space(tmp_path: Path) -> None:
    async with pipelines_server(tmp_path) as (_srv, client, ws, pipes):
        ids = [await _cli_agent(client, ws, n) for n in ("Ann", "Bob")]
        team = await client.call("teams.create", workspace_id=ws, name="Crew", memberIds=ids)
        item = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
        schema = {"type": "array", "items": item}
        dispatch = {
            "id": "crew",
            "body": "team.dispatch",
            "config": {"teamId": team["id"], "prompt": "lastline", "outputKey": "outs", "outputSchema": schema},
        }
        snap = await pipes.run(template({"id": "open", "body": "messaging.createSpace"}, dispatch))
        assert_completed(snap)
        assert snap["state"]["outs"] == [{"n": 2, "schemaType": "object"}] * 2
        runs = (await client.call("runs.list", workspace_id=ws))["runs"]
        assert sorted(r["agentId"] for r in runs) == sorted(ids) and all(r["outputSchema"] == item for r in runs)
        space = await client.call("spaces.get", workspace_id=ws, space_id=snap["state"]["pipeline_space_id"])
        assert space["hidden"] is True and space["mode"] == "review"

        # The same fan-out without a space fails at dispatch, and no run starts.
        before = len((await client.call("runs.list", workspace_id=ws))["runs"])
        snap = await pipes.run(template(dispatch))
        assert snap["status"] == "failed" and "add a messaging.createSpace step" in snap["steps"]["crew"]["error"]
        assert len((await client.call("runs.list", workspace_id=ws))["runs"]) == before

        # The schema must describe the list of member outputs.
        flat = {**dispatch, "config": {**dispatch["config"], "outputSchema": item}}
        snap = await pipes.run(template({"id": "open", "body": "messaging.createSpace"}, flat))
        assert "must be an array schema" in snap["steps"]["crew"]["error"]

        # A failing member fails the step, naming the run.
        snap = await pipes.run(
            template(
                {"id": "open", "body": "messaging.createSpace"},
                {**dispatch, "config": {**dispatch["config"], "prompt": "fail", "dispatchMode": "manager"}},
            )
        )
        assert "ended failed: the command exited with status 3" in snap["steps"]["crew"]["error"]


async def test_for_each_joins_prompts_and_handles_empty(tmp_path: Path) -> None:
    async with running_fake_openai() as fake, pipelines_server(tmp_path) as (_srv, client, ws, pipes):
        agent = await _openai_agent(client, ws, fake.url, "fe")
        fake.script("fe", call("submit_output", {"output": ["A", "B"]}))
        step = {
            "id": "each",
            "kind": "forEach",
            "body": "flow.forEach",
            "config": {
                "agentId": agent,
                "prompt": "Rate {{file.name}} for {{who}}",
                "outputKey": "ratings",
                "outputSchema": {"type": "array", "items": {"type": "string"}},
                "extras": {"iterableKey": "files", "itemKey": "file"},
            },
        }
        raw = template({"id": "open", "body": "messaging.createSpace"}, step)
        snap = await pipes.run(raw, {"files": [{"name": "a.py"}, {"name": "b.py"}], "who": "me"})
        assert_completed(snap)
        assert snap["state"]["ratings"] == ["A", "B"]
        assert fake.bodies_for("fe")[0]["messages"][-1]["content"] == "Rate a.py for me\n---\nRate b.py for me"

        snap = await pipes.run(raw, {"files": [], "who": "me"})
        assert snap["status"] == "completed" and snap["state"]["ratings"] == []
        assert len(fake.bodies_for("fe")) == 1  # nobody was dispatched


async def test_approval_gate(tmp_path: Path) -> None:
    async with running_fake_openai() as fake, pipelines_server(tmp_path) as (_srv, client, ws, pipes):
        agent = await _openai_agent(client, ws, fake.url, "gate", name="Approver")
        gate: dict[str, Any] = {
            "id": "gate",
            "body": "approval.gate",
            "config": {"agentId": agent, "outputKey": "approval"},
        }
        raw = template({"id": "open", "body": "messaging.createSpace"}, gate)
        fake.script("gate", call("submit_output", {"decision": "approved", "reason": "tests pass"}))
        snap = await pipes.run(raw)
        assert snap["status"] == "completed"
        assert snap["state"]["approval"] == {"decision": "approved", "reason": "tests pass"}
        tools = {t["function"]["name"]: t for t in fake.bodies_for("gate")[0]["tools"]}
        assert tools["submit_output"]["function"]["parameters"]["properties"]["decision"]["enum"] == [
            "approved",
            "rejected",
        ]
        assert "approve_step" not in tools and "reject_step" not in tools

        fake.script(
            "gate",
            call("submit_output", {"decision": "maybe", "reason": "unsure"}),
            call("submit_output", {"decision": "rejected", "reason": "no tests"}),
        )
        snap = await pipes.run(raw)
        assert snap["status"] == "failed"
        assert snap["steps"]["gate"]["error"] == "the approver rejected: no tests"


async def test_an_approval_gate_waits_for_the_approver_told_by_a_person(tmp_path: Path) -> None:
    """The approver answers without deciding: the gate keeps waiting, shows where the decision is made, and a
    later run of the approver in that space (a person telling it) that submits a valid decision resolves it. A
    run of another agent, or one whose output does not match the gate's schema, does not."""
    import asyncio

    async with running_fake_openai() as fake, pipelines_server(tmp_path) as (_srv, client, ws, pipes):
        approver = await _openai_agent(client, ws, fake.url, "gate2", name="Approver")
        other = await _openai_agent(client, ws, fake.url, "other", name="Other")
        raw = template(
            {"id": "open", "body": "messaging.createSpace"},
            {"id": "gate", "body": "approval.gate", "config": {"agentId": approver, "outputKey": "approval"}},
        )
        fake.script("gate2", text("A person decides this one; tell me their decision."))
        from hangar.pipelines import template as tpl

        run_id = await pipes.engine.start_run(ws, tpl.load(raw, pipes.engine.bodies).template, payload={})

        async def gate_detail() -> dict[str, Any]:
            for _ in range(1000):
                run = await client.call("pipelines.runs.get", workspace_id=ws, runId=run_id)
                (gate,) = [s for s in run["steps"] if s["stepId"] == "gate"]
                if gate["status"] == "suspended" and gate["suspendedOn"]["eventType"] == "agents.runFinished":
                    return dict(gate)
                await asyncio.sleep(0.02)
            raise AssertionError("the gate did not wait for a decision")

        gate = await gate_detail()
        approval = gate["approval"]
        assert approval["agentId"] == approver
        assert approval["outputSchema"]["required"] == ["decision", "reason"]
        space = approval["spaceId"]
        schema = approval["outputSchema"]
        # Another agent's decision, and the approver's run with an output the gate's schema refuses: still waiting.
        fake.script("other", call("submit_output", {"decision": "approved", "reason": "not mine to say"}))
        other_run = await client.call(
            "agents.run", workspace_id=ws, agentId=other, spaceId=space, prompt="@Other approve", outputSchema=schema
        )
        await wait_run(client, ws, other_run["runId"])
        fake.script("gate2", call("submit_output", {"verdict": "yes"}))
        loose = await client.call(
            "agents.run", workspace_id=ws, agentId=approver, spaceId=space, prompt="@Approver ok", outputSchema={}
        )
        await wait_run(client, ws, loose["runId"])
        await asyncio.sleep(0.3)
        assert (await gate_detail())["status"] == "suspended"

        fake.script("gate2", call("submit_output", {"decision": "approved", "reason": "Ann approved: ship it"}))
        told = await client.call(
            "agents.run",
            workspace_id=ws,
            agentId=approver,
            spaceId=space,
            prompt="@Approver Ann approves: ship it",
            outputSchema=schema,
        )
        await wait_run(client, ws, told["runId"])
        # The gate resumes on the run's finished event, which the engine takes up a moment later: until then the
        # pipeline run is still suspended (under load that moment can outlast the approver's run by a lot).
        for _ in range(500):
            snap = await pipes.engine.snapshot(ws, run_id)
            if snap["status"] not in ("running", "suspended"):
                break
            await asyncio.sleep(0.02)
        assert_completed(snap)
        assert snap["state"]["approval"] == {"decision": "approved", "reason": "Ann approved: ship it"}
        run = await client.call("pipelines.runs.get", workspace_id=ws, runId=run_id)
        assert [s["approval"] for s in run["steps"] if s["stepId"] == "gate"] == [None]


async def test_worktree_cleanup_body_and_dry_run(tmp_path: Path) -> None:
    src = make_repo(tmp_path / "src", "app")
    async with pipelines_server(tmp_path) as (_srv, client, ws, pipes):
        await client.call("repos.register", workspace_id=ws, path=str(src))
        space = await client.call("spaces.create", workspace_id=ws, title="w", repoIds=["app"])
        raw = template({"id": "clean", "body": "worktree.cleanup", "config": {"outputKey": "cleanup"}})
        snap = await pipes.run(raw, {"space_id": space["id"]}, dry_run=True)
        assert snap["status"] == "completed"
        assert snap["state"]["cleanup"] == "space: would release 1 worktree(s), would remove 1 folder(s) (dry run)"
        assert Path(space["folder"]).is_dir()
        snap = await pipes.run(raw, {"space_id": space["id"]})
        assert snap["state"]["cleanup"] == "space: released 1 worktree(s), removed 1 folder(s)"
        assert not Path(space["folder"]).exists()
        assert (await client.call("worktrees.list", workspace_id=ws))["worktrees"] == []
        snap = await pipes.run(raw)
        assert snap["state"]["cleanup"].startswith("sweep: released 0 worktree(s)")


@pytest.mark.packs("terminal")
async def test_a_repeated_attempt_finds_what_the_interrupted_one_did(tmp_path: Path) -> None:
    """Bodies run at least once: calling a body again for the same run, step and attempt (what the engine
    does after a crash) reuses the space, the message and the agent run instead of making new ones."""
    from hangar.agents.bodies.prompt import prompt_agent
    from hangar.pipelines import StepContext, StepDef
    from hangar.workspace.bodies import create_space, post_message

    src = make_repo(tmp_path / "src", "app")
    async with pipelines_server(tmp_path) as (srv, client, ws, _pipes):
        await client.call("repos.register", workspace_id=ws, path=str(src))
        agent = await _cli_agent(client, ws, "Cli")

        def ctx(step: dict[str, Any], state: dict[str, Any], attempt: int = 1) -> StepContext:
            async def progress(_data: Any) -> None:
                return None

            return StepContext(
                app=srv.ctx,
                run_id="run-1",
                workspace_id=ws,
                template_id="t",
                parent_run_id=None,
                dry_run=False,
                payload={},
                state=state,
                step=StepDef.model_validate({"kind": "listen", **step}),
                attempt=attempt,
                clock=srv.ctx.clock,
                run_dir=tmp_path / "run",
                progress=progress,
            )

        open_step = {"id": "open", "body": "messaging.createSpace", "config": {"repoIds": ["app"]}}
        first = await create_space(ctx(open_step, {}))
        again = await create_space(ctx(open_step, {}))
        assert first.output == again.output
        space_id = first.output
        assert len((await client.call("spaces.get", workspace_id=ws, space_id=space_id))["repos"]) == 1
        retry = await create_space(ctx(open_step, {}, attempt=2))  # a retry is a new attempt: a new space
        assert retry.output != space_id

        state = {"pipeline_space_id": space_id, "space_id": space_id, "content": "hello"}
        await post_message(ctx({"id": "post", "body": "messaging.postMessage"}, state))
        await post_message(ctx({"id": "post", "body": "messaging.postMessage"}, state))
        msgs = (await client.call("messages.list", workspace_id=ws, space_id=space_id))["messages"]
        assert [m["content"] for m in msgs] == ["hello"]

        ask = {"id": "ask", "body": "conversation.promptAgent", "config": {"agentId": agent, "prompt": "echo x"}}
        one = await prompt_agent(ctx(ask, state))
        two = await prompt_agent(ctx(ask, state))
        assert one.kind == "suspendUntilTasksComplete" and one.task_ids == two.task_ids
        assert len((await client.call("runs.list", workspace_id=ws))["runs"]) == 1
