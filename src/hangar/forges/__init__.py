"""Forges: a workspace's connection to GitHub (a GitHub App or a token, github.com or GitHub Enterprise Server),
its repos' links to forge repositories, the credential broker that hands confined code short-lived tokens for
hosts its enclosure reaches, and pull requests (a space each, webhooks and polling that fire ``pullRequest``
triggers). Other parts use it through services it provides (``ShellEnvironment``, the pipelines part's); the
composition lists ``hangar.forges.part.FORGES_PART``. ``PR_TRIGGER`` and ``PR_STATE_KEYS`` name the trigger kind a
pull request fires and the state keys its runs get (the pipelines part's contract)."""

from hangar.pipelines import PULL_REQUEST_STATE_KEYS as PR_STATE_KEYS
from hangar.pipelines import PULL_REQUEST_TRIGGER as PR_TRIGGER

__all__ = ["PR_STATE_KEYS", "PR_TRIGGER"]
