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
