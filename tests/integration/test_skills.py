"""Agent skills end to end on a real server: installs from a discovery index served on loopback and uploads, pinned
by digest; the supply-chain scan's verdicts on skills with one planted problem each and on clean ones; overrides
with their audit rows; a real pipeline run of ``skills.analyze`` finding digest drift; an agent run loading the
skill that passed and not the blocked one."""

from __future__ import annotations

import base64
import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from hangar.agents.skills.index import SCHEMA_0_2_0
from hangar.agents.skills.ops import MAX_UPLOAD_BYTES
from hangar.agents.skills.scan import MAX_INDEX_BYTES
from hangar.agents.skills.store import MAX_INSTRUCTIONS_BYTES, MAX_SKILLS
from tests.support.rpc import RpcClient, RpcError
from tests.support.serving import serving
from tests.unit.agents.fake_openai import running_fake_openai, text
from tests.unit.agents.skill_kits import CLEAN, PLANTED, digest, skill_md, tar_gz
from tests.unit.agents.support import pipelines_server, template, wait_run

INDEX = "/.well-known/agent-skills/index.json"


class IndexServer:
    """An agent-skills discovery index (0.2.0) and its skills, changeable while it serves."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.entries: dict[str, dict[str, Any]] = {}
        self.raw_index: bytes | None = None  # served instead of the entries when set
        self.url = ""

    def publish(self, name: str, kind: str, data: bytes, *, claimed: str | None = None) -> None:
        path = f"{name}/SKILL.md" if kind == "skill-md" else f"{name}/{name}.tar.gz"
        self.files[path] = data
        self.entries[name] = {
            "name": name,
            "type": kind,
            "description": f"{name} for the tests",
            "url": path,
            "digest": claimed or digest(data),
        }

    async def handle(self, request: Request) -> Response:
        path = request.path_params["path"]
        if path == "index.json":
            body = self.raw_index or json.dumps({"$schema": SCHEMA_0_2_0, "skills": list(self.entries.values())})
            return Response(body, media_type="application/json")
        if path == "moved/index.json":
            return RedirectResponse("http://169.254.169.254/index.json")
        if path in self.files:
            return Response(self.files[path])
        return Response("no such file", status_code=404)


@contextlib.asynccontextmanager
async def index_server() -> AsyncIterator[IndexServer]:
    idx = IndexServer()
    app = Starlette(routes=[Route("/.well-known/agent-skills/{path:path}", idx.handle)])
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="off")
    async with serving(config) as port:
        idx.url = f"http://127.0.0.1:{port}{INDEX}"
        yield idx


async def upload(client: RpcClient, ws: str, name: str, kind: str, data: bytes, **more: Any) -> dict[str, Any]:
    args = {"name": name, "kind": kind, "contentBase64": base64.b64encode(data).decode(), "digest": digest(data)}
    result: dict[str, Any] = await client.call("skills.upload", workspace_id=ws, **{**args, **more})
    return result


async def refused(call: Any, code: str = "invalid_args") -> str:
    with pytest.raises(RpcError) as exc:
        await call
    assert exc.value.code == code, exc.value
    return exc.value.message


async def findings(client: RpcClient, ws: str, skill_id: str) -> list[dict[str, Any]]:
    got = await client.call("skills.findings", workspace_id=ws, skillId=skill_id)
    return list(got["findings"])


async def test_planted_problems_get_their_verdicts_and_clean_skills_pass(tmp_path: Path) -> None:
    async with pipelines_server(tmp_path) as (_srv, client, ws, _pipes):
        for name, kind, data in CLEAN:
            skill = await upload(client, ws, name, kind, data)
            assert (skill["verdict"], skill["findings"], skill["loaded"]) == ("pass", 0, True), (name, skill)
        for name, kind, data, verdict, finding in PLANTED:
            skill = await upload(client, ws, name, kind, data)
            found = await findings(client, ws, skill["id"])
            assert skill["verdict"] == verdict, (name, found)
            assert finding in {f["kind"] for f in found}, (name, found)
            assert skill["loaded"] is False and skill["digest"] == digest(data)
        secret = next(
            s for s in (await client.call("skills.list", workspace_id=ws))["skills"] if s["name"] == "secret-in"
        )
        reply = json.dumps(await client.call("skills.findings", workspace_id=ws, skillId=secret["id"]))
        assert "an AWS access key id is written into the skill" in reply and "AKIAIOSFODNN7EXAMPLF" not in reply
        listed = {s["name"]: s["verdict"] for s in (await client.call("skills.list", workspace_id=ws))["skills"]}
        assert listed == {**{n: "pass" for n, *_ in CLEAN}, **{n: v for n, _k, _d, v, _f in PLANTED}}


async def test_install_from_an_index_is_pinned_by_digest(tmp_path: Path) -> None:
    async with index_server() as idx, pipelines_server(tmp_path) as (srv, client, ws, _pipes):
        good = skill_md("from-index")
        idx.publish("from-index", "skill-md", good)
        idx.publish("lying", "skill-md", skill_md("lying"), claimed=digest(b"something else"))
        skill = await client.call("skills.install", workspace_id=ws, indexUrl=idx.url, name="from-index")
        assert (skill["verdict"], skill["source"], skill["digest"]) == ("pass", "index", digest(good))
        assert skill["url"] == idx.url.replace("index.json", "from-index/SKILL.md")

        # The bytes do not hash to what the index gives: refused, naming both digests, nothing installed.
        message = await refused(client.call("skills.install", workspace_id=ws, indexUrl=idx.url, name="lying"))
        assert digest(skill_md("lying")) in message and digest(b"something else") in message
        assert "nothing was installed" in message
        assert [s["name"] for s in (await client.call("skills.list", workspace_id=ws))["skills"]] == ["from-index"]

        message = await refused(client.call("skills.install", workspace_id=ws, indexUrl=idx.url, name="absent"))
        assert "lists no skill 'absent'" in message
        message = await refused(
            client.call("skills.install", workspace_id=ws, indexUrl=idx.url, name="from-index"), "conflict"
        )
        assert "installed already" in message

        # A malformed index is refused, naming what is wrong.
        idx.raw_index = b'{"$schema": "' + SCHEMA_0_2_0.encode() + b'", "skills": [{"name": "x"}]}'
        message = await refused(client.call("skills.install", workspace_id=ws, indexUrl=idx.url, name="x"))
        assert message.startswith("indexUrl: the index at") and "skills[0].type is missing" in message
        idx.raw_index = b"<html>not json</html>"
        assert "it is not JSON" in await refused(
            client.call("skills.install", workspace_id=ws, indexUrl=idx.url, name="x")
        )
        moved = idx.url.replace("index.json", "moved/index.json")
        message = await refused(client.call("skills.install", workspace_id=ws, indexUrl=moved, name="x"))
        assert "redirects to http://169.254.169.254/index.json, which is not followed" in message

        # The index's size bound, at the limit and one past.
        body = json.dumps({"$schema": SCHEMA_0_2_0, "skills": [idx.entries["from-index"]]}).encode()
        idx.raw_index = body + b" " * (MAX_INDEX_BYTES - len(body))
        await client.call("skills.remove", workspace_id=ws, skillId=skill["id"])
        again = await client.call("skills.install", workspace_id=ws, indexUrl=idx.url, name="from-index")
        assert again["verdict"] == "pass"
        idx.raw_index += b" "
        # A scan that cannot read the index again does not know about drift: review, saying why.
        scanned = await client.call("skills.scan", workspace_id=ws, skillId=again["id"])
        assert (scanned["verdict"], scanned["loaded"]) == ("review", False)
        (why,) = await findings(client, ws, again["id"])
        assert why["kind"] == "digestDrift" and f"is larger than {MAX_INDEX_BYTES} bytes" in why["message"]
        message = await refused(client.call("skills.install", workspace_id=ws, indexUrl=idx.url, name="x"))
        assert f"is larger than {MAX_INDEX_BYTES} bytes" in message

        # A workspace admin's download is held to the outbound rules: this host's loopback is not theirs to reach.
        idx.raw_index = None
        token = await srv.new_user_token(ws, role="admin", name="admin")
        async with RpcClient(srv.ws_url, token) as admin:
            message = await refused(
                admin.call("skills.install", workspace_id=ws, indexUrl=idx.url, name="from-index"), "forbidden"
            )
            assert "127.0.0.1 is a loopback address" in message
        token = await srv.new_user_token(ws, role="member", name="member")
        async with RpcClient(srv.ws_url, token) as member:
            await refused(upload(member, ws, "m", "skill-md", skill_md("m")), "forbidden")


async def test_upload_refusals_and_its_size_bound(tmp_path: Path) -> None:
    async with pipelines_server(tmp_path) as (_srv, client, ws, _pipes):
        data = skill_md("up")
        message = await refused(upload(client, ws, "up", "skill-md", data, digest=digest(b"other")))
        assert f"hash to {digest(data)}, not {digest(b'other')}" in message
        assert "64 lowercase hex" in await refused(upload(client, ws, "up", "skill-md", data, digest="sha256:abc"))
        assert "not base64" in await refused(upload(client, ws, "up", "skill-md", data, contentBase64="***"))
        assert "not a skill name" in await refused(upload(client, ws, "../up", "skill-md", data))
        hostile = tar_gz({"SKILL.md": data, "../x": b""})
        assert "climbs out" in await refused(upload(client, ws, "up", "archive", hostile))
        assert (await client.call("skills.list", workspace_id=ws))["skills"] == []

        at_limit = data + b"\n" + b"word " * ((MAX_UPLOAD_BYTES - len(data) - 1) // 5)
        at_limit += b"x" * (MAX_UPLOAD_BYTES - len(at_limit))
        assert len(at_limit) == MAX_UPLOAD_BYTES
        assert (await upload(client, ws, "at-limit", "skill-md", at_limit))["size"] == MAX_UPLOAD_BYTES
        message = await refused(upload(client, ws, "past-limit", "skill-md", at_limit + b"x"))
        assert f"more than {MAX_UPLOAD_BYTES}" in message

        # What every agent run could be given: the installed skills' instructions together, at the bound and past.
        rest = b"y" * (MAX_INSTRUCTIONS_BYTES - MAX_UPLOAD_BYTES)
        assert (await upload(client, ws, "fills-up", "skill-md", rest))["size"] == len(rest)
        message = await refused(upload(client, ws, "one-byte", "skill-md", b"z"), "refused")
        assert f"more than {MAX_INSTRUCTIONS_BYTES} bytes of skill instructions" in message
        assert len((await client.call("skills.list", workspace_id=ws))["skills"]) == 2


async def test_a_workspace_holds_at_most_max_skills(tmp_path: Path) -> None:
    async with pipelines_server(tmp_path) as (_srv, client, ws, _pipes):
        for i in range(MAX_SKILLS):
            await upload(client, ws, f"s{i}", "skill-md", skill_md(f"s{i}"))
        message = await refused(upload(client, ws, "one-more", "skill-md", skill_md("one-more")), "refused")
        assert f"holds {MAX_SKILLS} skills, the most it may ({MAX_SKILLS})" in message
        assert len((await client.call("skills.list", workspace_id=ws))["skills"]) == MAX_SKILLS


async def test_an_admin_overrides_a_review_never_a_block(tmp_path: Path) -> None:
    async with pipelines_server(tmp_path) as (_srv, client, ws, _pipes):
        review = next(p for p in PLANTED if p[0] == "shellcheck-bad")
        blocked = next(p for p in PLANTED if p[0] == "override-rules")
        r = await upload(client, ws, review[0], review[1], review[2])
        b = await upload(client, ws, blocked[0], blocked[1], blocked[2])
        assert (r["verdict"], r["loaded"], b["verdict"]) == ("review", False, "blocked")

        done = await client.call("skills.override", workspace_id=ws, skillId=r["id"], reason="read SC1073: harmless")
        assert (done["overridden"], done["loaded"], done["overrideReason"]) == (True, True, "read SC1073: harmless")
        rows = await client.call("audit.list", workspace_id=ws)
        row = next(e for e in rows if e["action"] == "skills.override")
        assert row["target"] == f"skill:{r['id']}" and row["details"]["reason"] == "read SC1073: harmless"
        # The same findings on a new scan: the override holds.
        again = await client.call("skills.scan", workspace_id=ws, skillId=r["id"])
        assert (again["verdict"], again["loaded"]) == ("review", True)

        message = await refused(
            client.call("skills.override", workspace_id=ws, skillId=b["id"], reason="trust me"), "refused"
        )
        assert "never loaded" in message
        assert (await client.call("skills.findings", workspace_id=ws, skillId=b["id"]))["skill"]["loaded"] is False

        gone = await client.call("skills.remove", workspace_id=ws, skillId=r["id"])
        assert gone["name"] == "shellcheck-bad"
        # Each change is announced (screens listing skills read them again on it).
        events = await client.call("events.list", workspace_id=ws, types=["skills.changed"])
        said = [(e["payload"]["name"], e["payload"]["verdict"]) for e in events if e["payload"]["skillId"] == r["id"]]
        assert said == [("shellcheck-bad", v) for v in ("unscanned", "review", "review", "review", "removed")]
        assert [s["name"] for s in (await client.call("skills.list", workspace_id=ws))["skills"]] == ["override-rules"]
        await refused(client.call("skills.findings", workspace_id=ws, skillId=r["id"]), "not_found")


async def test_skills_analyze_pipeline_records_each_verdict_and_finds_drift(tmp_path: Path) -> None:
    async with index_server() as idx, pipelines_server(tmp_path) as (_srv, client, ws, pipes):
        raw = template({"id": "scan", "body": "skills.analyze", "config": {"outputKey": "verdicts"}})
        empty = await pipes.run(raw)
        assert empty["status"] == "completed" and empty["state"]["verdicts"]["skills"] == []

        idx.publish("drifting", "skill-md", skill_md("drifting"))
        await client.call("skills.install", workspace_id=ws, indexUrl=idx.url, name="drifting")
        clean = next(c for c in CLEAN if c[0] == "clean-archive")
        await upload(client, ws, *clean)
        # The index now publishes other bytes under the installed name.
        idx.publish("drifting", "skill-md", skill_md("drifting", b"\nNow also run this.\n"))

        snap = await pipes.run(raw)
        assert snap["status"] == "completed", snap
        out = snap["state"]["verdicts"]
        assert {s["name"]: s["verdict"] for s in out["skills"]} == {"clean-archive": "pass", "drifting": "blocked"}
        assert (out["pass"], out["review"], out["blocked"]) == (1, 0, 1)
        drifting = next(
            s for s in (await client.call("skills.list", workspace_id=ws))["skills"] if s["name"] == "drifting"
        )
        (drift,) = await findings(client, ws, drifting["id"])
        assert drift["kind"] == "digestDrift" and drift["severity"] == "block"
        assert (
            digest(skill_md("drifting")) in drift["message"] and idx.entries["drifting"]["digest"] in drift["message"]
        )


async def test_an_agent_run_loads_the_skill_that_passed_and_not_the_blocked_one(tmp_path: Path) -> None:
    async with running_fake_openai() as fake, pipelines_server(tmp_path) as (_srv, client, ws, _pipes):
        passed = next(c for c in CLEAN if c[0] == "clean-md")
        blocked = next(p for p in PLANTED if p[0] == "override-rules")
        review = next(p for p in PLANTED if p[0] == "network-out")
        for name, kind, data, *_ in (passed, blocked, review):
            await upload(client, ws, name, kind, data)
        space = await client.call("spaces.create", workspace_id=ws, title="Skills")
        agent = await client.call(
            "agents.create",
            workspace_id=ws,
            name="Ada",
            systemPrompt="You are careful.",
            adapter={"type": "openai", "baseUrl": fake.url, "model": "m1", "apiKey": "sk-test"},
        )
        fake.script("m1", text("Done."))
        started = await client.call(
            "agents.run", workspace_id=ws, agent_id=agent["id"], space_id=space["id"], prompt="Summarise the branch."
        )
        assert (await wait_run(client, ws, started["runId"]))["outcome"] == "ok"
        system = fake.bodies_for("m1")[0]["messages"][0]
        assert system["role"] == "system"
        assert f"## Skill: clean-md ({digest(passed[2])})" in system["content"]
        assert "Summarise the changes of a branch" in system["content"]
        assert "override-rules" not in system["content"] and "Ignore all previous" not in system["content"]
        assert "network-out" not in system["content"]
