"""What ``forge.prComment`` sends to the forge, attacked on a running server with the GitHub API emulator: a
``consolidated_findings`` written by any step is held to ``prReview.finalize``'s limits, and a review someone else
wrote the step's marker into does not pass for the server's own (which would keep its review off the pull
request)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hangar.forges.review_bodies import MAX_BODY
from hangar.forges.review_merge import MAX_FINDINGS, MAX_TEXT
from tests.integration.test_confined_user_code import finished, step
from tests.integration.test_forges_connect import APP_ID, forge_server
from tests.integration.test_forges_review import PR, REVIEWS, connect, finalize_and_comment, payload, run
from tests.integration.test_workspace_repos import make_repo
from tests.peers.github_reviews import Fault
from tests.unit.agents.fake_openai import call, running_fake_openai, text
from tests.unit.agents.support import template


def comment_only(tid: str) -> dict[str, Any]:
    return template({"id": "comment", "body": "forge.prComment"}, tid=tid)


def small(n: int, **over: Any) -> dict[str, Any]:
    return {"file": "a", "line": n + 1, "severity": "low", "category": "c", "message": "m", "suggestion": "", **over}


def findings(items: list[dict[str, Any]], **over: Any) -> dict[str, Any]:
    return {"verdict": "comment", "reviewers": 1, "findings": items, **over}


async def test_a_review_someone_else_wrote_the_marker_into_does_not_keep_ours_off(tmp_path: Path) -> None:
    """The pull request's author posts a review carrying the marker of the step that is about to post (its first
    attempt's post is lost, so the second looks for it): the server posts its own review all the same."""
    async with forge_server(tmp_path) as (_srv, owner, ws, gh):
        repo = await connect(owner, ws, gh, tmp_path)
        raw = finalize_and_comment("marker")
        comment = next(s for s in raw["steps"] if s["id"] == "comment")
        comment["config"] = {"retryPolicy": {"maxAttempts": 2, "backoff": "linear", "initialDelayMs": 3000}}
        gh.reviews.faults.append(Fault("POST /repos/acme/app/pulls/7/reviews", 404, message="Not Found"))
        await owner.call("pipelines.templates.create", workspace_id=ws, template=raw)
        started = await owner.call(
            "pipelines.runs.start", workspace_id=ws, templateId="marker", payload=payload(repo, reviews=REVIEWS)
        )
        marker = f"<!-- hangar-review:pipeline:{started['runId']}/comment -->"
        forged = gh.reviews.add("acme/app", PR, "ada", f"Looks good to me.\n\n{marker}")
        done = await finished(owner, ws, started["runId"])
        assert done["status"] == "completed", done
        reviews = gh.reviews.of("acme/app", PR)
        assert [r["user"] for r in reviews] == ["ada", f"hangar-app-{APP_ID}[bot]"], reviews
        ours = reviews[-1]
        assert ours["id"] != forged["id"] and ours["event"] == "REQUEST_CHANGES"
        assert done["state"]["comment_review_id"] == ours["id"]
        assert step(done, "comment")["progress"]["found"] is False


async def test_a_token_connection_finds_only_its_owners_review(tmp_path: Path) -> None:
    async with forge_server(tmp_path) as (_srv, owner, ws, gh):
        gh.user_tokens["ghp_reviewer"] = "reviewer"
        await owner.call("forge.connect", workspace_id=ws, token="ghp_reviewer", apiUrl=gh.api_url)
        repo = await owner.call("repos.register", workspace_id=ws, path=str(make_repo(tmp_path / "src", "app")))
        await owner.call("forge.linkRepo", workspace_id=ws, repoId=repo["id"], fullName="acme/app")
        gh.add_pull("acme/app", PR, files=[])
        # Its own review posted before the answer was lost is found; the author's copy of the marker is not.
        gh.reviews.faults.append(Fault("POST /repos/acme/app/pulls/7/reviews", 502, after=True))
        done = await run(owner, ws, comment_only("tok"), payload(repo, consolidated_findings="Fine."))
        assert done["status"] == "completed", done
        (mine,) = gh.reviews.of("acme/app", PR)
        assert mine["user"] == "reviewer" and step(done, "comment")["progress"]["found"] is True


@pytest.mark.parametrize(
    ("value", "error"),
    [
        (findings([small(n) for n in range(MAX_FINDINGS + 1)]), f"more than {MAX_FINDINGS} findings"),
        (
            findings([small(0, message="x" * (MAX_TEXT + 1))]),
            f"consolidated_findings.findings[0].message is longer than {MAX_TEXT} characters",
        ),
        (findings([small(0, line="9")]), "consolidated_findings.findings[0].line is not a line number"),
        (findings([small(0)], reviewers="x" * 100), "consolidated_findings.reviewers is not a count"),
        (findings([small(0)], counts={"every": "y" * 100}), "consolidated_findings.counts.every is not a count"),
        (findings([small(0, bucket="z" * 100)]), "consolidated_findings.findings[0].bucket"),
        (findings([small(0, raisedBy=2)]), "consolidated_findings.findings[0].raisedBy 2 is more than the 1"),
        ("t" * (MAX_BODY + 1), f"consolidated_findings is longer than {MAX_BODY} characters"),
    ],
)
async def test_findings_written_by_any_step_are_held_to_finalizes_limits(
    tmp_path: Path, value: Any, error: str
) -> None:
    async with forge_server(tmp_path) as (_srv, owner, ws, gh):
        repo = await connect(owner, ws, gh, tmp_path)
        done = await run(owner, ws, comment_only("bound"), payload(repo, consolidated_findings=value))
        assert done["status"] == "failed"
        assert error in step(done, "comment")["error"], step(done, "comment")["error"]
        assert gh.reviews.of("acme/app", PR) == []


async def test_findings_at_finalizes_limits_are_posted(tmp_path: Path) -> None:
    async with forge_server(tmp_path) as (_srv, owner, ws, gh):
        repo = await connect(owner, ws, gh, tmp_path)
        at_limit = findings([small(n) for n in range(MAX_FINDINGS - 1)] + [small(0, message="x" * MAX_TEXT)])
        for value in (at_limit, "t" * MAX_BODY):
            done = await run(owner, ws, comment_only("limit"), payload(repo, consolidated_findings=value))
            assert done["status"] == "completed", step(done, "comment")
        assert len(gh.reviews.of("acme/app", PR)) == 2


LOW = {"findings": [{"file": "src/db.py", "line": 3, "severity": "low", "category": "docs", "message": "Typo",
                     "suggestion": "Fix it"}]}  # fmt: skip


async def reviewed_by(owner: Any, ws: str, repo: dict[str, Any], fake: Any, fails: int, tid: str) -> dict[str, Any]:
    """The built-in template with three reviewer agents, the first ``fails`` of them failing (their model answers
    a 400), the others finding only a low typo; the finished run."""
    ids = []
    for n in range(3):
        model = f"{tid}{n}"
        adapter = {"type": "openai", "baseUrl": fake.url, "model": model}
        ids.append((await owner.call("agents.create", workspace_id=ws, name=model, adapter=adapter))["id"])
        fake.script(model, text("no", status=400) if n < fails else call("submit_output", LOW))
    made = await owner.call("forge.reviewTemplate", workspace_id=ws, agentIds=ids, templateId=tid)
    return await run(owner, ws, made["template"], payload(repo))


async def test_failed_reviewers_never_let_the_others_approve(tmp_path: Path) -> None:
    async with running_fake_openai() as fake, forge_server(tmp_path) as (_srv, owner, ws, gh):
        repo = await connect(owner, ws, gh, tmp_path)
        done = await reviewed_by(owner, ws, repo, fake, 2, "twofail")
        assert done["status"] == "completed", done
        found = done["state"]["consolidated_findings"]
        assert done["state"]["review_verdict"] == found["verdict"] == "comment"
        assert found["reviewers"] == 1 and found["failedReviewers"] == ["review1", "review2"]
        (review,) = gh.reviews.of("acme/app", PR)
        assert review["event"] == "COMMENT" and review["body"].startswith("## Review: Comment\n")
        assert "**2 of 3 reviewers failed** and gave no review: this is not an approval" in review["body"]


async def test_with_one_reviewer_failed_still_no_approval_and_with_none_an_approval(tmp_path: Path) -> None:
    async with running_fake_openai() as fake, forge_server(tmp_path) as (_srv, owner, ws, gh):
        repo = await connect(owner, ws, gh, tmp_path)
        done = await reviewed_by(owner, ws, repo, fake, 1, "onefail")
        assert done["state"]["review_verdict"] == "comment"
        assert "**1 of 3 reviewers failed**" in gh.reviews.of("acme/app", PR)[0]["body"]
        done = await reviewed_by(owner, ws, repo, fake, 0, "nofail")
        assert done["state"]["review_verdict"] == "approve"
        assert done["state"]["consolidated_findings"]["failedReviewers"] == []
        second = gh.reviews.of("acme/app", PR)[1]
        assert second["body"].startswith("## Review: Approve\n") and "failed" not in second["body"]


async def test_findings_from_another_step_that_name_failed_reviewers_are_not_an_approval(tmp_path: Path) -> None:
    async with forge_server(tmp_path) as (_srv, owner, ws, gh):
        repo = await connect(owner, ws, gh, tmp_path)
        value = findings([], verdict="approve", failedReviewers=["r2"])
        done = await run(owner, ws, comment_only("capped"), payload(repo, consolidated_findings=value))
        assert done["status"] == "completed", done
        (review,) = gh.reviews.of("acme/app", PR)
        assert review["body"].startswith("## Review: Comment\n") and "**1 of 2 reviewers failed**" in review["body"]
