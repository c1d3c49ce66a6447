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
    note: str | None = omitted_when_none()
    error: str | None = omitted_when_none()  # what the forge answered when asked just now, if it failed
    setup_url: str = Field(description="The forge's page that creates a GitHub App for Hangar (reads no secret)")


class ReviewTemplate(Result):
    template: dict[str, Any] = Field(
        description="The built-in review template for these reviewers: save it with pipelines.templates.create"
    )
    trigger: str = Field(description="The trigger kind that starts it when a pull request is opened or pushed to")
    state_keys: list[str] = Field(
        description="What a run's payload holds (pipelines.runs.start by hand: repo_id, repo_full_name, pr_number, "
        "optionally head_sha)"
    )
