"""A pull request as GitHub answers it now, through githubkit: the pull request, its files (with their patches),
its check runs and commit statuses, and a repository's open pull requests (the poll).

An app connection reads with an installation token minted for the one repository and read permissions, revoked
when the reading ends; a token connection reads with its token. GitHub's answers become: 404 ``PullVanished`` (the
pull request or the repository is gone, or the app no longer reaches it), a rate limit (403 or 429 with
``x-ratelimit-remaining: 0`` or ``retry-after``) ``RateLimited`` carrying when to ask again, 5xx ``ForgeDown``
(``Unavailable``); any other refusal ``Refused`` naming GitHub's status and message.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from hangar.errors import NotFound, Unavailable
from hangar.forges import github
from hangar.forges.reach import Route
from hangar.forges.store import ForgeConnection

if TYPE_CHECKING:
    from githubkit import GitHub  # imported by the calls (``github.client``): see there

log = logging.getLogger(__name__)

# What reading a pull request needs of the app, nothing more.
READ_PERMISSIONS: dict[str, str] = {"pull_requests": "read", "contents": "read", "checks": "read", "statuses": "read"}
PAGE = 100  # GitHub's largest page
MAX_FILES = 300  # GitHub lists at most 3,000 files of a pull request; a space shows the first 300 (three pages)
MAX_PATCH_CHARS = 100_000  # per file: a larger patch is kept cut, marked ``patchTruncated``
# All the files' patches of one pull request together, as stored (its row, every event and reply that carries it):
# the files after the budget is spent keep what is left of it (maybe nothing), marked ``patchTruncated``. Without
# it a pull request of 300 large files would be stored at 30 MB, again at every push.
MAX_PATCHES_CHARS = 2_000_000
MAX_CHECKS = 100  # check runs and statuses of a head kept (one page of each, then cut)
MAX_LISTED = PAGE  # open pull requests a poll reads per repository (one page)


class PullVanished(NotFound):
    """GitHub answers 404 for the pull request (or its repository)."""


class ForgeDown(Unavailable):
    """GitHub answered 5xx or could not be reached."""


class RateLimited(Unavailable):
    def __init__(self, message: str, retry_at: float) -> None:
        super().__init__(message, detail_code="forgeRateLimited")
        self.retry_at = retry_at  # epoch seconds


@dataclass(frozen=True)
class PullFile:
    filename: str
    status: str
    additions: int
    deletions: int
    patch: str | None
    patch_truncated: bool = False


@dataclass(frozen=True)
class Check:
    kind: str  # checkRun or status
    name: str
    status: str  # queued, in_progress, completed (check runs); pending, success, failure, error (statuses)
    conclusion: str | None
    url: str | None


@dataclass(frozen=True)
class PullFacts:
    number: int
    title: str
    author: str
    body: str
    state: str  # open, closed, merged
    draft: bool
    base_ref: str
    base_sha: str
    head_ref: str
    head_sha: str
    html_url: str
    updated_at: datetime
    files: list[PullFile] = field(default_factory=list)
    files_truncated: bool = False
    checks: list[Check] = field(default_factory=list)


@dataclass(frozen=True)
class OpenPull:
    number: int
    head_sha: str


def retry_at(headers: Any, now: float) -> float | None:
    """When a rate-limited forge says to ask again (epoch seconds), from ``retry-after`` (seconds) or, with
    ``x-ratelimit-remaining: 0``, ``x-ratelimit-reset`` (epoch seconds); None when it is no rate limit."""
    after = headers.get("retry-after")
    if after is not None and after.strip().isdigit():
        return now + int(after)
    if headers.get("x-ratelimit-remaining") == "0":
        reset = headers.get("x-ratelimit-reset", "")
        return float(reset) if reset.strip().isdigit() else now + 60.0
    return None


@asynccontextmanager
async def _reading(what: str, host: str) -> AsyncIterator[None]:
    from githubkit.exception import RequestFailed  # here, as in ``github.calling``

    try:
        async with github.calling(what, host):
            try:
                yield
            except RequestFailed as exc:
                status = exc.response.status_code
                if status == 404:
                    raise PullVanished(f"{host} answers 404 (not found) to {what}") from None
                if status in (403, 429) and (when := retry_at(exc.response.headers, time.time())) is not None:
                    raise RateLimited(f"{host} rate-limits the requests to {what}", when) from None
                if status >= 500:
                    raise ForgeDown(f"{host} failed to {what} ({status})") from None
                raise
    except Unavailable as exc:
        if isinstance(exc, (RateLimited, ForgeDown)):
            raise
        raise ForgeDown(exc.message) from None


@asynccontextmanager
async def reader(connection: ForgeConnection, full_name: str, route: Route) -> AsyncIterator[GitHub[Any]]:
    """A client that reads ``full_name``: an installation token minted for it alone (revoked afterwards), or the
    connection's token."""
    if connection.kind == "token":
        assert connection.token is not None
        async with github.token_client(connection.api_url, connection.token, route) as gh:
            yield gh
        return
    async with (
        github.minted_for(connection, [full_name], route, READ_PERMISSIONS) as minted,
        github.token_client(connection.api_url, minted.token, route) as gh,
    ):
        yield gh


def _state(pull: Any) -> str:
    return "merged" if getattr(pull, "merged", False) or pull.merged_at is not None else str(pull.state)


async def pull_request(connection: ForgeConnection, full_name: str, number: int, route: Route) -> PullFacts:
    """The pull request, its files and its head's checks, as GitHub answers now."""
    owner, name = full_name.split("/", 1)
    host = connection.host
    async with reader(connection, full_name, route) as gh:
        async with _reading(f"read pull request {full_name}#{number}", host):
            pr = (await gh.rest.pulls.async_get(owner, name, number)).parsed_data
        entries: list[Any] = []
        async with _reading(f"list the files of {full_name}#{number}", host):
            # GitHub answers at most 100 a page: the first pages, up to MAX_FILES.
            for page in range(1, MAX_FILES // PAGE + 1):
                listed = await gh.rest.pulls.async_list_files(owner, name, number, per_page=PAGE, page=page)
                entries += cast("list[Any]", listed.parsed_data)
                if len(listed.parsed_data) < PAGE:
                    break
        head = pr.head.sha
        async with _reading(f"list the checks of {full_name}#{number}", host):
            runs = (await gh.rest.checks.async_list_for_ref(owner, name, head, per_page=PAGE)).parsed_data
            answered = await gh.rest.repos.async_list_commit_statuses_for_ref(owner, name, head, per_page=PAGE)
            statuses = cast("list[Any]", answered.parsed_data)
    files = []
    budget = MAX_PATCHES_CHARS
    for entry in entries[:MAX_FILES]:
        patch = entry.patch if isinstance(entry.patch, str) else None
        room = min(MAX_PATCH_CHARS, budget)
        cut = patch is not None and len(patch) > room
        kept = patch[:room] if patch is not None else None
        budget -= len(kept or "")
        files.append(PullFile(entry.filename, str(entry.status), entry.additions, entry.deletions, kept, cut))
    checks = [Check("checkRun", r.name, str(r.status), r.conclusion, r.html_url) for r in runs.check_runs]
    seen: set[str] = set()
    for s in statuses:  # newest first: a context's latest status counts
        if s.context not in seen:
            seen.add(s.context)
            checks.append(Check("status", s.context, s.state, None, s.target_url))
    return PullFacts(
        number=pr.number,
        title=pr.title,
        author=pr.user.login if pr.user is not None else "",
        body=pr.body or "",
        state=_state(pr),
        draft=bool(pr.draft),
        base_ref=pr.base.ref,
        base_sha=pr.base.sha,
        head_ref=pr.head.ref,
        head_sha=head,
        html_url=pr.html_url,
        updated_at=pr.updated_at,
        files=files,
        files_truncated=pr.changed_files > len(files),
        checks=checks[:MAX_CHECKS],
    )


async def open_pull_requests(connection: ForgeConnection, full_name: str, route: Route) -> list[OpenPull]:
    """The repository's open pull requests (number and head), the poll's question."""
    owner, name = full_name.split("/", 1)
    async with (
        reader(connection, full_name, route) as gh,
        _reading(f"list the open pull requests of {full_name}", connection.host),
    ):
        found = await gh.rest.pulls.async_list(owner, name, state="open", per_page=MAX_LISTED)
        return [OpenPull(p.number, p.head.sha) for p in cast("list[Any]", found.parsed_data)]
