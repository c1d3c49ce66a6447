"""Reviewing a pull request through real pipeline runs on a running server, over its RPC: the built-in template
(``forge.reviewTemplate``) with reviewer agents on a scripted model in the pull request's checkout,
``prReview.finalize`` and ``forge.prComment`` posting one review with inline comments to the GitHub API emulator
(``tests.peers.github_pulls``). The forge's faults are honoured (a 5xx retried, a rate limit waited out until its
reset, a review stored before a 502 found instead of posted twice); refusals name what was wrong."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_confined_user_code import finished, step
from tests.integration.test_forges_broker import stored_anywhere
from tests.integration.test_forges_connect import APP_ID, forge_server
from tests.integration.test_workspace_repos import _git, make_repo
from tests.peers.github_emulator import GitHubEmulator
from tests.peers.github_reviews import Fault, added_file
from tests.support.mcp import mcp_session
from tests.support.mcp import payload as payload_of
from tests.support.rpc import RpcClient, RpcError
from tests.support.runs import assert_completed
from tests.unit.agents.fake_openai import call, running_fake_openai
from tests.unit.agents.support import template

PR = 7
DIFF = [added_file("src/db.py", 1, 60), added_file("README.md", 1, 5)]


def finding(line: int, message: str, severity: str = "high", category: str = "security", **kw: Any) -> dict[str, Any]:
    return {"file": "src/db.py", "line": line, "severity": severity, "category": category, "message": message,
            "suggestion": "Use query parameters", **kw}  # fmt: skip


SQLI = "SQL query built with string formatting allows SQL injection"
REVIEWS = [
    {"findings": [finding(42, SQLI), finding(300, "The connection is never closed", "medium", "bug")]},
    {"findings": [finding(43, "Possible SQL injection: user input formatted into the query")]},
    {"findings": [finding(42, SQLI, "blocker"), finding(3, "Typo in the module docstring", "low", "docs")]},
]


async def connect(owner: RpcClient, ws: str, gh: GitHubEmulator, tmp_path: Path) -> dict[str, Any]:
    """The forge connected as an app installed on acme/app, and a workspace repo ``app`` linked to it whose origin
    publishes pull request 7's head."""
    key = gh.add_app(APP_ID)
    gh.install(APP_ID, "acme", ["app"])
    await owner.call("forge.connect", workspace_id=ws, appId=APP_ID, privateKey=key, apiUrl=gh.api_url)
    src = make_repo(tmp_path / "src", "app")
    _git(src, "update-ref", f"refs/pull/{PR}/head", "feature")
    repo = await owner.call("repos.register", workspace_id=ws, path=str(src))
    await owner.call("forge.linkRepo", workspace_id=ws, repoId=repo["id"], fullName="acme/app")
    gh.add_pull("acme/app", PR, files=list(DIFF))
    return dict(repo)


def payload(repo: dict[str, Any], **over: Any) -> dict[str, Any]:
    return {"repo_id": repo["id"], "repo_full_name": "acme/app", "pr_number": PR, "head_sha": "a" * 40, **over}


async def run(c: RpcClient, ws: str, raw: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
    """Save the template (unless saved before) and run it to its end with ``data`` as the payload."""
    listed = (await c.call("pipelines.templates.list", workspace_id=ws))["templates"]
    if raw["id"] not in [t["id"] for t in listed]:
        await c.call("pipelines.templates.create", workspace_id=ws, template=raw)
    started = await c.call("pipelines.runs.start", workspace_id=ws, templateId=raw["id"], payload=data)
    return await finished(c, ws, started["runId"])


def finalize_and_comment(tid: str) -> dict[str, Any]:
    return template(
        {"id": "finalize", "body": "prReview.finalize"}, {"id": "comment", "body": "forge.prComment"}, tid=tid
    )


async def test_the_built_in_template_reviews_a_pull_request_with_agents_and_posts_one_review(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with running_fake_openai() as fake, forge_server(tmp_path) as (srv, owner, ws, gh):
        repo = await connect(owner, ws, gh, tmp_path)
        agents = []
        for n, review in enumerate(REVIEWS):
            adapter = {"type": "openai", "baseUrl": fake.url, "model": f"rev{n}"}
            agents.append((await owner.call("agents.create", workspace_id=ws, name=f"R{n}", adapter=adapter))["id"])
            fake.script(f"rev{n}", call("submit_output", review))
        made = await owner.call("forge.reviewTemplate", workspace_id=ws, agentIds=agents)
        assert made["trigger"] == "pullRequest"
        assert made["stateKeys"] == ["repo_id", "repo_full_name", "pr_number", "head_sha"]
        done = await run(owner, ws, made["template"], payload(repo))
        assert_completed(done)
        state = done["state"]
        found = state["consolidated_findings"]
        assert state["review_verdict"] == found["verdict"] == "request_changes"
        assert [(f["bucket"], f["line"], f["severity"]) for f in found["findings"]] == [
            ("every", 42, "blocker"),
            ("one", 300, "medium"),
            ("one", 3, "low"),
        ]
        # One review: the inline comments on the diff's lines, the finding on line 300 (not in it) in the body.
        (review,) = gh.reviews.of("acme/app", PR)
        assert state["comment_review_id"] == review["id"] and state["commented_at"].endswith("Z")
        assert review["event"] == "REQUEST_CHANGES" and review["commit_id"] == "a" * 40
        assert [(c["path"], c["line"], c.get("start_line")) for c in review["comments"]] == [
            ("src/db.py", 43, 42),
            ("src/db.py", 3, None),
        ]
        assert "raised by 3 of 3 (every reviewer)" in review["comments"][0]["body"]
        assert "`src/db.py:300` **medium**" in review["body"] and "hangar-review:pipeline:" in review["body"]
        # The reviewers worked in a review-mode space holding the pull request's checkout.
        space = await owner.call("spaces.get", workspace_id=ws, space_id=state["pipeline_space_id"])
        assert space["mode"] == "review" and (Path(space["folder"]) / "app" / "feature.txt").exists()
        # The review's token was narrowed to the repository and to reviewing, and revoked; it is nowhere.
        (minted,) = [m for m in gh.minted if m.permissions.get("pull_requests") and "contents" not in m.permissions]
        assert minted.repositories == ("acme/app",) and minted.revoked
        detail = json.dumps(await owner.call("pipelines.runs.get", workspace_id=ws, runId=done["runId"]))
        assert minted.token not in detail and stored_anywhere(srv.data_dir, [minted.token]) == []
        assert minted.token not in caplog.text
        events = json.dumps(await owner.call("events.list", workspace_id=ws))
        assert minted.token not in events


async def test_a_pull_request_opened_starts_the_review_through_its_pullrequest_trigger(tmp_path: Path) -> None:
    async with running_fake_openai() as fake, forge_server(tmp_path) as (_srv, owner, ws, gh):
        repo = await connect(owner, ws, gh, tmp_path)
        adapter = {"type": "openai", "baseUrl": fake.url, "model": "solo"}
        agent = (await owner.call("agents.create", workspace_id=ws, name="Solo", adapter=adapter))["id"]
        fake.script("solo", call("submit_output", REVIEWS[0]))
        made = await owner.call("forge.reviewTemplate", workspace_id=ws, agentIds=[agent])
        await owner.call("pipelines.templates.create", workspace_id=ws, template=made["template"])
        await owner.call("pipelines.triggers.create", workspace_id=ws, templateId="pr-review", kind=made["trigger"])
        await owner.call("forge.openPr", workspace_id=ws, repoId=repo["id"], number=PR)
        runs: list[dict[str, Any]] = []
        for _ in range(100):
            runs = (await owner.call("pipelines.runs.list", workspace_id=ws))["runs"]
            if runs:
                break
            await asyncio.sleep(0.1)
        (started,) = runs
        done = await finished(owner, ws, started["runId"])
        assert_completed(done)
        assert {k: done["payload"][k] for k in made["stateKeys"]} == payload(repo, head_sha="1" * 40)
        (review,) = gh.reviews.of("acme/app", PR)
        assert review["commit_id"] == "1" * 40 and review["event"] == "REQUEST_CHANGES"


async def test_a_team_reviews_through_one_dispatch(tmp_path: Path) -> None:
    async with running_fake_openai() as fake, forge_server(tmp_path) as (_srv, owner, ws, gh):
        repo = await connect(owner, ws, gh, tmp_path)
        ids = []
        for n in range(2):
            adapter = {"type": "openai", "baseUrl": fake.url, "model": f"t{n}"}
            ids.append((await owner.call("agents.create", workspace_id=ws, name=f"T{n}", adapter=adapter))["id"])
            fake.script(f"t{n}", call("submit_output", {"findings": [finding(10, "Typo in a comment", "low", "docs")]}))
        team = await owner.call("teams.create", workspace_id=ws, name="Reviewers", memberIds=ids)
        made = await owner.call("forge.reviewTemplate", workspace_id=ws, teamId=team["id"], templateId="team-review")
        done = await run(owner, ws, made["template"], payload(repo))
        assert_completed(done)
        assert done["state"]["review_verdict"] == "approve"
        (review,) = gh.reviews.of("acme/app", PR)
        # An approving verdict is said in a comment, never posted as GitHub's approval.
        assert review["event"] == "COMMENT" and len(review["comments"]) == 1
        assert review["body"].startswith("## Review: ")


async def test_the_forges_faults_are_retried_and_a_stored_review_is_never_posted_twice(tmp_path: Path) -> None:
    async with forge_server(tmp_path) as (_srv, owner, ws, gh):
        repo = await connect(owner, ws, gh, tmp_path)
        reset = int(time.time()) + 2
        gh.outages = 1  # the next pull request answer (the files) is a 502
        gh.reviews.faults += [
            Fault(
                "POST /repos/acme/app/pulls/7/reviews",
                403,
                {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(reset)},
                "API rate limit exceeded",
            ),
            Fault("POST /repos/acme/app/pulls/7/reviews", 502, after=True),
        ]
        done = await run(owner, ws, finalize_and_comment("faults"), payload(repo, reviews=REVIEWS))
        assert_completed(done)
        reviews = gh.reviews.of("acme/app", PR)
        assert len(reviews) == 1 and done["state"]["comment_review_id"] == reviews[0]["id"]
        seen = [what for what, _ in gh.reviews.seen]
        assert gh.requests.count("GET /repos/acme/app/pulls/7/files") == 2
        assert seen.count("POST /repos/acme/app/pulls/7/reviews") == 2  # the limited one, the stored one
        posts = [at for what, at in gh.reviews.seen if what == "POST /repos/acme/app/pulls/7/reviews"]
        assert posts[1] >= reset  # not before the limit's reset
        # After the 502, the review it had stored was looked for and found: the step answers it.
        assert step(done, "comment")["progress"]["found"] is True


async def test_a_step_run_again_finds_the_review_its_earlier_attempt_posted(tmp_path: Path) -> None:
    """The first attempt's review is stored but the answer is lost (a 404 from a proxy, not retried within the
    attempt); the node's retry policy runs the step again, which finds that review and posts none."""
    async with forge_server(tmp_path) as (_srv, owner, ws, gh):
        repo = await connect(owner, ws, gh, tmp_path)
        raw = finalize_and_comment("again")
        comment = next(s for s in raw["steps"] if s["id"] == "comment")
        comment["config"] = {"retryPolicy": {"maxAttempts": 2, "backoff": "linear", "initialDelayMs": 50}}
        gh.reviews.faults.append(Fault("POST /repos/acme/app/pulls/7/reviews", 404, message="Not Found", after=True))
        done = await run(owner, ws, raw, payload(repo, reviews=REVIEWS))
        assert_completed(done)
        (review,) = gh.reviews.of("acme/app", PR)
        assert done["state"]["comment_review_id"] == review["id"]
        assert step(done, "comment")["attempts"] == 2 and step(done, "comment")["progress"]["found"] is True


async def test_a_rate_limit_far_away_and_a_vanished_pull_request_fail_the_step_naming_why(tmp_path: Path) -> None:
    async with forge_server(tmp_path) as (_srv, owner, ws, gh):
        repo = await connect(owner, ws, gh, tmp_path)
        gh.rate_limited_until = int(time.time()) + 3600
        done = await run(owner, ws, finalize_and_comment("far"), payload(repo, reviews=REVIEWS))
        assert done["status"] == "failed"
        assert "rate-limits this forge connection until" in step(done, "comment")["error"]
        gh.rate_limited_until = None
        del gh.pulls[("acme/app", PR)]
        done = await run(owner, ws, finalize_and_comment("gone"), payload(repo, reviews=REVIEWS))
        assert step(done, "comment")["error"].startswith(
            "github.com refused to list the files of acme/app#7 (404: Not Found)"
        )


async def test_a_token_connection_posts_with_its_own_token(tmp_path: Path) -> None:
    async with forge_server(tmp_path) as (_srv, owner, ws, gh):
        gh.user_tokens["ghp_reviewer"] = "reviewer"
        await owner.call("forge.connect", workspace_id=ws, token="ghp_reviewer", apiUrl=gh.api_url)
        src = make_repo(tmp_path / "src", "app")
        repo = await owner.call("repos.register", workspace_id=ws, path=str(src))
        await owner.call("forge.linkRepo", workspace_id=ws, repoId=repo["id"], fullName="acme/app")
        gh.add_pull("acme/app", PR, files=list(DIFF))
        done = await run(owner, ws, finalize_and_comment("tok"), payload(repo, reviews=REVIEWS[:1]))
        assert_completed(done)
        assert gh.reviews.of("acme/app", PR)[0]["event"] == "REQUEST_CHANGES"
        assert "ghp_reviewer" not in json.dumps(done)
        # The token's owner wrote the next pull request: GitHub refuses its verdict, so it is posted as a comment.
        gh.add_pull("acme/app", PR + 1, files=list(DIFF), author="reviewer")
        done = await run(owner, ws, finalize_and_comment("tok"), payload(repo, reviews=REVIEWS[:1], pr_number=PR + 1))
        assert_completed(done)
        (own,) = gh.reviews.of("acme/app", PR + 1)
        assert own["event"] == "COMMENT" and "does not let this account request changes on its own" in own["body"]


@pytest.mark.parametrize(
    ("over", "error"),
    [
        ({"pr_number": "seven"}, "pr_number 'seven' is not a pull request's number"),
        ({"pr_number": 0}, "pr_number 0 is not a pull request's number"),
        ({"repo_full_name": "acme"}, "'acme' is not a forge repository's owner/name"),
        ({"repo_full_name": "acme/other"}, "acme/other is not linked to a repo of this workspace"),
        ({"reviews": [{"findings": [{"file": "a"}]}]}, "reviews[0].findings[0].line is not a line number"),
        ({"reviews": None}, "reviews is not a list"),
    ],
)
async def test_bad_state_keys_fail_the_step_naming_the_key(tmp_path: Path, over: dict[str, Any], error: str) -> None:
    async with forge_server(tmp_path) as (_srv, owner, ws, gh):
        repo = await connect(owner, ws, gh, tmp_path)
        done = await run(owner, ws, finalize_and_comment("bad"), payload(repo, reviews=REVIEWS) | over)
        assert done["status"] == "failed"
        errors = [s["error"] for s in done["steps"] if s.get("error")]
        assert len(errors) == 1 and error in errors[0], errors
        assert gh.reviews.of("acme/app", PR) == []


async def test_without_a_forge_or_findings_the_comment_step_fails_naming_why(tmp_path: Path) -> None:
    async with forge_server(tmp_path) as (_srv, owner, ws, _gh):
        comment = template({"id": "comment", "body": "forge.prComment"}, tid="c")
        base = {"repo_full_name": "acme/app", "pr_number": PR}
        done = await run(owner, ws, comment, base)
        assert "state has no consolidated_findings" in step(done, "comment")["error"]
        done = await run(owner, ws, comment, base | {"consolidated_findings": "Looks fine."})
        assert step(done, "comment")["error"].startswith("no forge is connected to this workspace")
        done = await run(owner, ws, template({"id": "finalize", "body": "prReview.finalize"}, tid="f"), base)
        assert "state has no reviews" in step(done, "finalize")["error"]


async def test_a_guest_and_another_workspaces_member_cannot_make_or_start_a_review(tmp_path: Path) -> None:
    async with forge_server(tmp_path) as (srv, owner, ws, gh):
        repo = await connect(owner, ws, gh, tmp_path)
        await owner.call("pipelines.templates.create", workspace_id=ws, template=finalize_and_comment("r"))
        other = await srv.new_workspace("elsewhere")
        callers = {
            "guest": await srv.new_user_token(ws, "guest", name="gus"),
            "another workspace's member": await srv.new_user_token(other, "member", name="oth"),
        }
        for who, token in callers.items():
            async with RpcClient(srv.ws_url, token) as c:
                with pytest.raises(RpcError) as made:
                    await c.call("forge.reviewTemplate", workspace_id=ws, agentIds=["a"])
                assert made.value.code == "forbidden", who
                with pytest.raises(RpcError) as started:
                    await c.call("pipelines.runs.start", workspace_id=ws, templateId="r", payload=payload(repo))
                assert started.value.code == "forbidden", who
        assert gh.reviews.of("acme/app", PR) == []
        # a member may
        member = await srv.new_user_token(ws, "member", name="mem")
        async with RpcClient(srv.ws_url, member) as c:
            made = await c.call("forge.reviewTemplate", workspace_id=ws, agentIds=["a", "b"])
            assert [s["id"] for s in made["template"]["steps"]][2:4] == ["review1", "review2"]
            for bad, field in (({}, "agentIds"), ({"agentIds": ["a"], "teamId": "t"}, "agentIds")):
                with pytest.raises(RpcError) as refused:
                    await c.call("forge.reviewTemplate", workspace_id=ws, **bad)
                assert refused.value.code == "invalid_args" and field in refused.value.message
            at_limit = await c.call("forge.reviewTemplate", workspace_id=ws, agentIds=[f"a{n}" for n in range(10)])
            assert len(at_limit["template"]["steps"]) == 15
            with pytest.raises(RpcError) as too_many:
                await c.call("forge.reviewTemplate", workspace_id=ws, agentIds=[f"a{n}" for n in range(11)])
            assert "at most 10 reviewer agents" in too_many.value.message


async def test_the_review_template_is_a_tool_on_the_mcp_endpoint(tmp_path: Path) -> None:
    async with forge_server(tmp_path) as (srv, _owner, ws, _gh), mcp_session(srv, srv.owner_token) as session:
        tools = [t.name for t in (await session.list_tools()).tools]
        assert "forge.reviewTemplate" in tools
        made = payload_of(await session.call_tool("forge.reviewTemplate", {"workspace_id": ws, "agentIds": ["a"]}))
        assert made["trigger"] == "pullRequest" and made["template"]["id"] == "pr-review"
        checked = payload_of(
            await session.call_tool("pipelines.templates.validate", {"workspace_id": ws, "template": made["template"]})
        )
        # The template's bodies are all registered; only the made-up agent id is a problem.
        assert checked["valid"] is False and all("agentId" in p for p in checked["problems"]), checked
