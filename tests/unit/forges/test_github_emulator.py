"""The GitHub API emulator answers in shapes githubkit's own typed models accept, so the forge part's tests
exercise the parsing the real GitHub's answers go through (installation tokens are parsed by the client in
``tests/integration/test_forges_broker.py``)."""

from __future__ import annotations

from githubkit_schemas.latest.models import Installation, PublicUser

from tests.peers.github_emulator import GitHubEmulator


def test_the_emulators_answers_parse_as_githubkits_models() -> None:
    gh = GitHubEmulator(base="http://127.0.0.1:1")
    gh.add_app(7)
    installation = Installation.model_validate(gh.installation_json(gh.install(7, "acme", ["app"])))
    assert installation.account is not None and installation.app_id == 7
    user = PublicUser.model_validate(gh.public_user_json("ada"))
    assert user.login == "ada"


def test_the_emulators_pull_requests_parse_as_githubkits_models() -> None:
    from githubkit_schemas.latest.models import (
        DiffEntry,
        PullRequest,
        PullRequestSimple,
        ReposOwnerRepoCommitsRefCheckRunsGetResponse200,
        Status,
    )

    from tests.peers import github_pulls as shapes

    gh = GitHubEmulator(base="http://127.0.0.1:1")
    pull = gh.add_pull(
        "acme/app",
        7,
        files=[{"filename": "a.py", "additions": 2, "deletions": 1, "patch": "@@ -1 +1,2 @@\n-x\n+y\n+z"}],
        check_runs=[
            {"name": "ci", "status": "completed", "conclusion": "success"},
            {"name": "lint", "status": "queued"},
        ],
        statuses=[{"context": "deploy", "state": "pending"}],
    )
    full = PullRequest.model_validate(shapes.pull_json(gh, pull))
    assert full.head.sha == pull.head_sha and full.user is not None and full.user.login == "ada"
    assert PullRequestSimple.model_validate(shapes.pull_json(gh, pull, simple=True)).number == 7
    assert DiffEntry.model_validate(shapes.file_json(gh, pull, pull.files[0])).patch is not None
    runs = [shapes.check_run_json(gh, pull, i, r) for i, r in enumerate(pull.check_runs)]
    parsed = ReposOwnerRepoCommitsRefCheckRunsGetResponse200.model_validate({"total_count": 2, "check_runs": runs})
    assert [r.conclusion for r in parsed.check_runs] == ["success", None]
    assert Status.model_validate(shapes.status_json(gh, pull, 0, pull.statuses[0])).context == "deploy"


def test_the_emulators_reviews_parse_as_githubkits_models() -> None:
    from githubkit_schemas.latest.models import PullRequestReview

    from tests.peers.github_reviews import review_json

    gh = GitHubEmulator(base="http://127.0.0.1:1")
    raw = {
        "id": 5,
        "user": "hangar-app-1[bot]",
        "body": "b",
        "state": "COMMENTED",
        "commit_id": "f" * 40,
        "submitted_at": "2026-01-01T00:00:00Z",
    }
    review = PullRequestReview.model_validate(review_json(gh, "acme/app", 7, raw))
    assert review.id == 5 and review.user is not None
