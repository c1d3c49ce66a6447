"""The GitHub API emulator answers in shapes githubkit's own typed models accept, so the forge part's tests
exercise the parsing the real GitHub's answers go through (installation tokens are parsed by the client in
``tests/integration/test_forges_broker.py``)."""

from __future__ import annotations

from githubkit_schemas.latest.models import DiffEntry, Installation, PublicUser, PullRequestReview

from tests.peers.github_emulator import GitHubEmulator
from tests.peers.github_pulls import added_patch, diff_entry, review_json


def test_the_emulators_answers_parse_as_githubkits_models() -> None:
    gh = GitHubEmulator(base="http://127.0.0.1:1")
    gh.add_app(7)
    installation = Installation.model_validate(gh.installation_json(gh.install(7, "acme", ["app"])))
    assert installation.account is not None and installation.app_id == 7
    user = PublicUser.model_validate(gh.public_user_json("ada"))
    assert user.login == "ada"


def test_the_pull_request_answers_parse_as_githubkits_models() -> None:
    gh = GitHubEmulator(base="http://127.0.0.1:1")
    entry = DiffEntry.model_validate(diff_entry(gh, "acme/app", "a.py", added_patch(1, 3)))
    assert entry.filename == "a.py" and entry.additions == 3
    raw = {"id": 5, "body": "b", "state": "COMMENTED", "commit_id": "f" * 40, "submitted_at": "2026-01-01T00:00:00Z"}
    review = PullRequestReview.model_validate(review_json(gh, "acme/app", 7, raw))
    assert review.id == 5 and review.user is not None
