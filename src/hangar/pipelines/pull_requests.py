"""The ``pullRequest`` trigger's contract: what fires it and what its runs find in their payload.

The forges part publishes ``PULL_REQUEST_EVENT`` when a pull request of a repo linked to the workspace's forge is
opened or its head moves (a webhook, a poll, or by hand); every enabled ``pullRequest`` trigger of the workspace
starts a run whose payload holds ``PULL_REQUEST_STATE_KEYS`` (over the trigger's own payload), snake_case as
templates name state keys, taken from the event's camelCase wire payload (``run_payload``). A firing is keyed by
repo, number and head commit, so one head starts at most one run per trigger, however often it is reported.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

PULL_REQUEST_TRIGGER = "pullRequest"
PULL_REQUEST_EVENT = "forge.pullRequest"
# The workspace repo's id, its forge repository (owner/name), the pull request's number and its head's commit.
# The payload also has ``action`` (opened, reopened, synchronize) and ``space_id`` (the pull request's space).
PULL_REQUEST_STATE_KEYS: tuple[str, ...] = ("repo_id", "repo_full_name", "pr_number", "head_sha")


# The event's wire fields and the state keys they become.
_STATE_KEY_OF_FIELD = {
    "repoId": "repo_id",
    "repoFullName": "repo_full_name",
    "prNumber": "pr_number",
    "headSha": "head_sha",
    "action": "action",
    "spaceId": "space_id",
}


def run_payload(event_payload: Mapping[str, Any]) -> dict[str, Any]:
    """What a pullRequest trigger's run gets of the event: its fields under their state keys."""
    return {key: event_payload[name] for name, key in _STATE_KEY_OF_FIELD.items() if name in event_payload}


def pull_request_firing(payload: Mapping[str, Any]) -> str:
    """The firing key of a pull request's head (``payload`` as ``run_payload`` makes it): ``<repo>#<n>@<sha>``."""
    return f"{payload.get('repo_id')}#{payload.get('pr_number')}@{payload.get('head_sha')}"
