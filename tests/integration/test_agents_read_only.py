"""Read-only agent steps (``extras.readOnlyWorktree``) on a running server, through real pipeline runs over its RPC:
a command agent's program in a real enclosure reads the space's folder and every write it tries there fails with
EROFS (the same program in a plain step writes); trusted host execution, which cannot mount the folder read-only,
refuses the run naming the setting instead of trusting the program; a read-only run is offered read ops only; the
built-in review template marks every reviewer read-only, and a command reviewer in a pull request's checkout reads
it, cannot change it, and its findings are posted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_confined_user_code import finished, step
from tests.integration.test_forges_connect import forge_server
from tests.integration.test_forges_review import PR, connect, payload, run
from tests.support.confined import CLI_AGENT, trust_host
from tests.support.rpc import RpcClient
from tests.support.runs import assert_completed
from tests.unit.agents.fake_openai import running_fake_openai, text
from tests.unit.agents.support import template, workspace_server

# Reads the file the space holds, then writes twice (touch, a shell redirection), saying how each went.
TRY_WRITES = "cat notes.txt; touch made-by-touch 2>&1; echo touch=$?; (echo x > made-by-echo) 2>&1; echo echo=$?"


async def _space_with_notes(c: RpcClient, ws: str) -> tuple[str, Path]:
    space_id = (await c.call("spaces.create", workspace_id=ws, title="ro"))["id"]
    folder = Path((await c.call("spaces.get", workspace_id=ws, space_id=space_id))["folder"])
    (folder / "notes.txt").write_text("the notes\n")
    return space_id, folder


async def _shell_agent(c: RpcClient, ws: str, script: str, **adapter: Any) -> str:
    made = {"type": "command", "argv": ["sh", "-c", script], **adapter}
    return str((await c.call("agents.create", workspace_id=ws, name="Writer", adapter=made))["id"])


def _ask(agent_id: str, space_id: str, tid: str, **extras: Any) -> dict[str, Any]:
    config = {"agentId": agent_id, "prompt": "go", "outputKey": "said", "extras": {"spaceId": space_id, **extras}}
    return template({"id": "ask", "body": "conversation.promptAgent", "config": config}, tid=tid)


async def _run(c: RpcClient, ws: str, raw: dict[str, Any]) -> dict[str, Any]:
    await c.call("pipelines.templates.create", workspace_id=ws, template=raw)
    started = await c.call("pipelines.runs.start", workspace_id=ws, templateId=raw["id"])
    return await finished(c, ws, started["runId"], timeout=300)


@pytest.mark.packs("terminal")
@pytest.mark.parametrize("read_only", [True, False])
async def test_a_read_only_step_mounts_the_folder_read_only_and_a_plain_one_does_not(
    tmp_path: Path, read_only: bool
) -> None:
    async with workspace_server(tmp_path) as (_srv, c, ws):
        space_id, folder = await _space_with_notes(c, ws)
        agent_id = await _shell_agent(c, ws, TRY_WRITES)
        extras = {"readOnlyWorktree": True} if read_only else {}
        done = await _run(c, ws, _ask(agent_id, space_id, "ro" if read_only else "rw", **extras))
        assert_completed(done)
        said = done["state"]["said"]
        assert said.startswith("the notes\n")  # it reads the folder either way
        if read_only:
            assert "touch=1" in said and "echo=" in said and "echo=0" not in said
            assert said.count("Read-only file system") == 2, said  # EROFS, for both writes
            assert not (folder / "made-by-touch").exists() and not (folder / "made-by-echo").exists()
        else:
            assert "touch=0" in said and "echo=0" in said and "Read-only" not in said
            assert (folder / "made-by-touch").exists() and (folder / "made-by-echo").read_text() == "x\n"


@pytest.mark.parametrize("read_only", [True, False])
async def test_under_trusted_host_execution_a_read_only_step_is_refused_naming_the_setting(
    tmp_path: Path, read_only: bool
) -> None:
    async with workspace_server(tmp_path) as (srv, c, ws):
        await trust_host(srv.ctx)
        space_id, folder = await _space_with_notes(c, ws)
        agent_id = await _shell_agent(c, ws, TRY_WRITES)
        extras = {"readOnlyWorktree": True} if read_only else {}
        done = await _run(c, ws, _ask(agent_id, space_id, "ro" if read_only else "rw", **extras))
        if read_only:
            # Nothing on the host could stop the program's writes: it is not run at all.
            assert done["status"] == "failed"
            error = step(done, "ask")["error"]
            assert "read-only (readOnlyWorktree)" in error and "cannot mount the space's folder read-only" in error
            assert "the command was not run" in error
            assert not (folder / "made-by-touch").exists() and not (folder / "made-by-echo").exists()
        else:
            assert_completed(done)
            assert (folder / "made-by-touch").exists() and (folder / "made-by-echo").exists()


@pytest.mark.parametrize("value", ["yes", 1, None])
async def test_a_read_only_flag_that_is_not_a_boolean_fails_the_step_naming_it(tmp_path: Path, value: Any) -> None:
    async with workspace_server(tmp_path) as (_srv, c, ws):
        space_id, _folder = await _space_with_notes(c, ws)
        agent_id = await _shell_agent(c, ws, "echo hi")
        done = await _run(c, ws, _ask(agent_id, space_id, "bad", readOnlyWorktree=value))
        assert done["status"] == "failed"
        assert "extras.readOnlyWorktree must be true or false" in step(done, "ask")["error"]
        runs = (await c.call("runs.list", workspace_id=ws))["runs"]
        assert runs == []  # no agent was dispatched


@pytest.mark.parametrize("read_only", [True, False])
async def test_a_read_only_run_is_offered_read_ops_only(tmp_path: Path, read_only: bool) -> None:
    async with running_fake_openai() as fake, workspace_server(tmp_path) as (_srv, c, ws):
        space_id = (await c.call("spaces.create", workspace_id=ws, title="ro"))["id"]
        adapter = {"type": "openai", "baseUrl": fake.url, "model": "m", "productTools": ["rig.open", "spaces.get"]}
        agent_id = (await c.call("agents.create", workspace_id=ws, name="Reader", adapter=adapter))["id"]
        fake.script("m", text("done"))
        extras = {"readOnlyWorktree": True} if read_only else {}
        await _run(c, ws, _ask(agent_id, space_id, "tools", **extras))
        offered = {t["function"]["name"] for t in fake.requests[0]["tools"]}
        assert "spaces__get" in offered
        assert ("rig__open" in offered) is not read_only  # opening a rig of the space would mount it writable


@pytest.mark.packs("terminal")
@pytest.mark.parametrize("read_only", [True, False])
async def test_a_read_only_command_runs_mcp_credential_holds_read_ops_only(tmp_path: Path, read_only: bool) -> None:
    async with workspace_server(tmp_path) as (_srv, c, ws):
        space_id = (await c.call("spaces.create", workspace_id=ws, title="ro"))["id"]
        adapter = {"type": "command", "argv": [*CLI_AGENT], "productTools": ["rig.open", "rig.exec", "spaces.get"]}
        agent_id = (await c.call("agents.create", workspace_id=ws, name="Lister", adapter=adapter))["id"]
        extras = {"readOnlyWorktree": True} if read_only else {}
        raw = _ask(agent_id, space_id, "mcp", **extras)
        raw["steps"][1]["config"]["prompt"] = "tools"
        done = await _run(c, ws, raw)
        assert_completed(done)
        listed = json.loads(done["state"]["said"])
        assert "spaces.get" in listed
        assert ("rig.open" in listed and "rig.exec" in listed) is not read_only


@pytest.mark.packs("terminal")
async def test_the_review_templates_command_reviewer_reads_the_checkout_and_cannot_change_it(tmp_path: Path) -> None:
    async with forge_server(tmp_path) as (_srv, owner, ws, gh):
        repo = await connect(owner, ws, gh, tmp_path)
        script = TRY_WRITES.replace("notes.txt", "app/feature.txt").replace("made-by", "app/made-by")
        script += "; echo '{\"findings\": []}'"
        agent = await _shell_agent(owner, ws, script)
        made = await owner.call("forge.reviewTemplate", workspace_id=ws, agentIds=[agent])
        reviewers = [s for s in made["template"]["steps"] if s["id"].startswith("review")]
        assert reviewers and all(s["config"]["extras"] == {"readOnlyWorktree": True} for s in reviewers)
        team = await owner.call("teams.create", workspace_id=ws, name="T", memberIds=[agent])
        by_team = await owner.call("forge.reviewTemplate", workspace_id=ws, teamId=team["id"])
        (dispatch,) = [s for s in by_team["template"]["steps"] if s.get("body") == "team.dispatch"]
        assert dispatch["config"]["extras"] == {"readOnlyWorktree": True}
        done = await run(owner, ws, made["template"], payload(repo))
        assert_completed(done)
        assert done["state"]["reviews"] == [{"findings": []}] and done["state"]["review_verdict"] == "approve"
        space_id = done["state"]["pipeline_space_id"]
        checkout = Path((await owner.call("spaces.get", workspace_id=ws, space_id=space_id))["folder"]) / "app"
        assert (checkout / "feature.txt").exists()
        assert not (checkout / "made-by-touch").exists() and not (checkout / "made-by-echo").exists()
        msgs = (await owner.call("messages.list", workspace_id=ws, space_id=space_id))["messages"]
        (said,) = [m["content"] for m in msgs if m["author"]["kind"] == "agent"]
        assert said.count("Read-only file system") == 2 and "touch=1" in said
        assert gh.reviews.of("acme/app", PR)  # the (empty) review was posted
