"""What the forge ops answer. No result carries a credential: the private key and tokens travel in only."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from hangar.core.types import Timestamp
from hangar.rpc.registry import Result, omitted_when_none


class InstallationView(Result):
    id: int
    account: str = Field(description="The user, organization or enterprise the app is installed on")
    repository_selection: str = Field(description="all or selected: which of the account's repositories it reaches")


class RepoLinkView(Result):
    repo_id: str
    repo_name: str
    full_name: str = Field(description="The forge repository, owner/name")
    how: Literal["given", "origin"] = Field(description="given by hand (forge.linkRepo) or read from the origin")


class ForgeStatus(Result):
    connected: bool
    kind: Literal["app", "token"] | None = omitted_when_none()
    host: str | None = omitted_when_none()
    web_url: str | None = omitted_when_none()
    api_url: str | None = omitted_when_none()
    app_id: int | None = omitted_when_none()
    login: str | None = omitted_when_none()
    connected_at: Timestamp | None = omitted_when_none()
    connected_by: str | None = omitted_when_none()
    installations: list[InstallationView] = Field(default_factory=list)
    links: list[RepoLinkView] = Field(default_factory=list)
    brokers_tokens: bool = Field(
        default=False, description="Whether steps get short-lived per-repository tokens (app connections)"
    )
    webhook_secret_set: bool = Field(default=False, description="Whether webhook deliveries are taken")
    poll_seconds: int | None = Field(default=None, description="How often the forge is polled for pull requests")
    note: str | None = omitted_when_none()
    error: str | None = omitted_when_none()  # what the forge answered when asked just now, if it failed
    setup_url: str = Field(description="The forge's page that creates a GitHub App for Hangar (reads no secret)")


class PullFileView(Result):
    filename: str
    status: str = Field(description="added, removed, modified, renamed...")
    additions: int
    deletions: int
    patch: str | None = Field(default=None, description="The file's unified diff hunks (absent for binaries)")
    patch_truncated: bool = Field(
        default=False,
        description=(
            "The patch was cut: at 100,000 characters, or where the pull request's 2,000,000 characters of "
            "patches in all ran out"
        ),
    )


class CheckView(Result):
    kind: Literal["checkRun", "status"]
    name: str
    status: str = Field(description="queued, in_progress, completed (check runs); pending, success, failure, error")
    conclusion: str | None = omitted_when_none()
    url: str | None = omitted_when_none()


class PullSummary(Result):
    id: str
    repo_id: str
    full_name: str = Field(description="The forge repository, owner/name")
    number: int
    space_id: str = Field(description="The pull request's space")
    title: str
    author: str
    state: Literal["open", "closed", "merged", "vanished"] = Field(
        description="vanished: the forge answers 404 for it now (what it said last is kept)"
    )
    head_sha: str
    html_url: str = Field(description="The pull request on the forge")
    synced_at: Timestamp = Field(description="When the forge last answered for it")
    error: str | None = omitted_when_none()  # the last sync's failure


class PullView(PullSummary):
    body: str
    draft: bool
    base_ref: str
    base_sha: str
    head_ref: str
    files: list[PullFileView]
    files_truncated: bool = Field(description="The pull request has more files than the 300 kept")
    checks: list[CheckView]


class PullList(Result):
    pulls: list[PullSummary]


class WebhookView(Result):
    url: str = Field(description="Where the forge delivers this workspace's webhooks (content type JSON)")
    secret_set: bool = Field(description="Whether a webhook secret is stored (it is never shown)")
    events: list[str] = Field(description="The events to subscribe the webhook to")


class PollingView(Result):
    seconds: int | None = Field(default=None, description="How often the forge is polled; absent: not polled")


class ReviewTemplate(Result):
    template: dict[str, Any] = Field(
        description="The built-in review template for these reviewers: save it with pipelines.templates.create"
    )
    trigger: str = Field(description="The trigger kind that starts it when a pull request is opened or pushed to")
    state_keys: list[str] = Field(
        description="What a run's payload holds (pipelines.runs.start by hand: repo_id, repo_full_name, pr_number, "
        "optionally head_sha)"
    )
