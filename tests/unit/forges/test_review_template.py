"""The built-in review template: its shape for agents and for a team, and the trigger it declares matching the
pipelines part's ``pullRequest`` trigger."""

from __future__ import annotations

import importlib

import pytest

from hangar.errors import InvalidArgs
from hangar.forges.review_template import MAX_REVIEWERS, PR_STATE_KEYS, PR_TRIGGER, review_template


def test_agents_review_in_parallel_then_finalize_then_comment() -> None:
    raw = review_template(["a", "b", "a"])
    steps = {s["id"]: s for s in raw["steps"]}
    assert list(steps) == ["start", "checkout", "review1", "review2", "finalize", "comment", "end"]
    assert steps["checkout"]["config"]["repoIds"] == ["{{repo_id}}#{{pr_number}}"]
    assert steps["checkout"]["config"]["extras"]["mode"] == "review"
    for sid in ("review1", "review2"):
        assert steps[sid]["trigger"] == {"sourceStepIds": ["checkout"]}
        assert steps[sid]["config"]["reducer"] == "append" and steps[sid]["config"]["continueOnFail"] is True
    assert steps["finalize"]["waitForStepIds"] == ["review1", "review2"]
    assert steps["comment"]["body"] == "forge.prComment"


def test_a_team_is_one_dispatch() -> None:
    steps = {s["id"]: s for s in review_template(team_id="t")["steps"]}
    assert steps["review"]["body"] == "team.dispatch" and steps["finalize"]["waitForStepIds"] == ["review"]


@pytest.mark.parametrize(
    ("agents", "team", "named"),
    [
        ([], None, "agentIds or a teamId"),
        (["a"], "t", "agentIds or a teamId"),
        ([" "], None, "a reviewer's id is empty"),
        ([], " ", "a reviewer's id is empty"),
    ],
)
def test_reviewers_are_agents_or_a_team(agents: list[str], team: str | None, named: str) -> None:
    with pytest.raises(InvalidArgs, match=named):
        review_template(agents, team)


def test_reviewer_limit_on_both_sides() -> None:
    assert len(review_template([f"a{n}" for n in range(MAX_REVIEWERS)])["steps"]) == MAX_REVIEWERS + 5
    with pytest.raises(InvalidArgs, match=f"at most {MAX_REVIEWERS}"):
        review_template([f"a{n}" for n in range(MAX_REVIEWERS + 1)])


def test_the_declared_trigger_is_the_pipelines_parts_pull_request_trigger() -> None:
    """Once the ``pullRequest`` trigger is part of the pipelines part, its name and state keys are these."""
    try:
        contract = importlib.import_module("hangar.pipelines.pull_requests")
    except ModuleNotFoundError:
        pytest.skip("the pullRequest trigger is not part of this build")
    assert contract.PULL_REQUEST_TRIGGER == PR_TRIGGER
    assert tuple(contract.PULL_REQUEST_STATE_KEYS) == PR_STATE_KEYS


def test_the_template_id_is_not_empty() -> None:
    with pytest.raises(InvalidArgs, match="templateId is empty"):
        review_template(["a"], template_id=" ")
