"""Posting a pull request review through githubkit: the diff's lines, the reviews already there, a new review.

Every call is retried where the forge asks for it, and only there:

- a 5xx answer: up to ``MAX_TRIES`` tries in all, ``BACKOFF_S`` before the second and doubling;
- a rate limit (403 or 429 with ``retry-after``, or with ``x-ratelimit-remaining: 0`` and ``x-ratelimit-reset``):
  the call waits until the time the forge names (``retry-after`` seconds, or the reset's epoch second), when that
  is at most ``MAX_RATE_WAIT_S`` away; further away it fails ``Unavailable`` naming when the limit lifts (a node's
  ``retryPolicy`` may try again later);
- anything else (a 403 without those headers, a 404, a 422) is ``Refused`` at once, naming GitHub's status and
  message.

Creating a review is made safe to repeat by a marker (``review_marker``) in its body: before every try, the
reviews on the pull request are read and one the server's own account posted carrying the marker is answered
instead of posting again (a 5xx may come after GitHub stored the review; a step may run again after a crash). A
review by anyone else carrying the marker is ignored: the marker is no secret (it is in every review's body).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from hangar.core.clock import Clock, SystemClock
from hangar.errors import InvalidArgs, Unavailable
from hangar.forges.github import calling, token_client
from hangar.forges.github_pulls import retry_at
from hangar.forges.reach import Route
from hangar.forges.store import ForgeConnection

if TYPE_CHECKING:
    from githubkit.exception import RequestFailed  # imported by the calls (``github.client``): see there

T = TypeVar("T")

MAX_TRIES = 4
BACKOFF_S = 0.5
MAX_RATE_WAIT_S = 60.0
PER_PAGE = 100
MAX_PAGES = 30  # GitHub lists at most 3,000 files of a pull request
OWN_PULL = "own pull request"  # in GitHub's 422 refusing to approve or request changes on one's own
_OWN_PULL_NOTE = {
    "APPROVE": "(Posted as a comment: GitHub does not let this account approve its own pull request.)",
    "REQUEST_CHANGES": "(Posted as a comment: GitHub does not let this account request changes on its own pull "
    "request.)",
}
_MARGIN_S = 0.1  # past the time the forge named, never just before it (its clock counts whole seconds)
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@")


@dataclass(frozen=True)
class InlineComment:
    path: str
    line: int
    body: str
    start_line: int | None = None

    def wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path, "line": self.line, "side": "RIGHT", "body": self.body}
        if self.start_line is not None and self.start_line < self.line:
            out |= {"start_line": self.start_line, "start_side": "RIGHT"}
        return out


@dataclass(frozen=True)
class PostedReview:
    id: int
    submitted_at: datetime
    found: bool  # an earlier try had posted it


def review_marker(key: str) -> str:
    """What a review's body carries so a later try finds it (an HTML comment: GitHub does not show it)."""
    return f"<!-- hangar-review:{key} -->"


def diff_lines(patch: str) -> set[int]:
    """The new file's lines a review comment may be placed on (added and context lines of the patch's hunks)."""
    lines: set[int] = set()
    at: int | None = None
    for text in patch.splitlines():
        hunk = _HUNK.match(text)
        if hunk:
            at = int(hunk.group(1))
            continue
        if at is None or text.startswith("\\"):
            continue
        if text.startswith("-"):
            continue
        lines.add(at)
        at += 1
    return lines


def _rate_wait(exc: RequestFailed, now: float) -> float | None:
    """Seconds the forge asks to wait before trying again (``github_pulls.retry_at``), or None when it is no rate
    limit."""
    response = exc.response.raw_response
    if response.status_code not in (403, 429):
        return None
    when = retry_at(response.headers, now)
    return None if when is None else max(0.0, when - now)


def _wait_or_raise(exc: RequestFailed, attempt: int, what: str, host: str, now: float) -> float:
    """How long to wait before the next try, or raise: ``exc`` again when it is not to be retried (or the tries
    are spent), ``Unavailable`` when the rate limit lifts too far away."""
    wait = _rate_wait(exc, now)
    if wait is None and exc.response.status_code >= 500:
        wait = BACKOFF_S * 2 ** (attempt - 1)
    if wait is None or attempt == MAX_TRIES:
        raise exc
    if wait > MAX_RATE_WAIT_S:
        until = datetime.fromtimestamp(now + wait, UTC).isoformat(timespec="seconds")
        raise Unavailable(f"{host} rate-limits this forge connection until {until}: could not {what}") from None
    return wait


async def retrying(what: str, host: str, call: Callable[[], Awaitable[T]], clock: Clock) -> T:
    """``call`` with the retries of the module's docstring; GitHub's refusals become ``Refused``."""
    from githubkit.exception import RequestFailed  # here, as in ``github.calling``

    attempt = 1
    while True:
        async with calling(what, host):
            try:
                return await call()
            except RequestFailed as exc:
                wait = _wait_or_raise(exc, attempt, what, host, clock.now().timestamp())
        await clock.sleep(wait + _MARGIN_S)
        attempt += 1


@dataclass(frozen=True)
class PullRequest:
    """A pull request and how to reach it: the connection, the token and the route checked for the calls."""

    connection: ForgeConnection
    token: str
    route: Route
    full_name: str
    number: int
    clock: Clock = field(default_factory=SystemClock)  # waits and "now" for the retries

    def client(self) -> Any:
        return token_client(self.connection.api_url, self.token, self.route)

    @property
    def owner_and_name(self) -> tuple[str, str]:
        owner, name = self.full_name.split("/", 1)
        return owner, name


ListPage = Callable[[Any, int], Any]  # githubkit client, page -> awaitable answer


async def _every(pr: PullRequest, what: str, list_page: ListPage) -> list[Any]:
    """Every item a paginated list answers (``list_page(gh, page)``), each page retried as the module says."""
    found: list[Any] = []
    async with pr.client() as gh:
        for page in range(1, MAX_PAGES + 1):

            async def one(page: int = page) -> list[Any]:
                return list((await list_page(gh, page)).parsed_data)

            items = await retrying(f"{what} of {pr.full_name}#{pr.number}", pr.connection.host, one, pr.clock)
            found += items
            if len(items) < PER_PAGE:
                break
    return found


async def commentable_lines(pr: PullRequest) -> dict[str, set[int]]:
    """Each file of the pull request's diff and the lines of it a review comment may be placed on."""
    owner, name = pr.owner_and_name

    def files(gh: Any, page: int) -> Any:
        return gh.rest.pulls.async_list_files(owner, name, pr.number, per_page=PER_PAGE, page=page)

    listed = await _every(pr, "list the files", files)
    return {f.filename: diff_lines(f.patch if isinstance(f.patch, str) else "") for f in listed}


async def find_review(pr: PullRequest, marker: str, author: str) -> PostedReview | None:
    """The review ``author`` (the server's own account, ``github.own_login``) posted on the pull request with
    ``marker`` in its body, if there is one. Anyone may write the marker in a review of their own (the pull
    request's author, to keep the server's review off it): only the server's own reviews count."""
    owner, name = pr.owner_and_name

    def reviews(gh: Any, page: int) -> Any:
        return gh.rest.pulls.async_list_reviews(owner, name, pr.number, per_page=PER_PAGE, page=page)

    for r in await _every(pr, "list the reviews", reviews):
        login = getattr(getattr(r, "user", None), "login", None)
        if marker in (r.body or "") and isinstance(login, str) and login.lower() == author.lower():
            return PostedReview(r.id, _submitted(r.submitted_at), found=True)
    return None


async def post_review(
    pr: PullRequest,
    *,
    body: str,
    event: str,
    comments: list[InlineComment],
    marker: str,
    author: str,
    commit_id: str | None = None,
) -> PostedReview:
    """One review with its inline comments, posted once: each try first looks for the review an earlier one made
    (``author``'s, carrying ``marker``)."""
    if event not in ("APPROVE", "REQUEST_CHANGES", "COMMENT"):
        raise InvalidArgs(f"{event!r} is not a review event", field="event")
    owner, name = pr.owner_and_name

    async def once() -> PostedReview:
        from githubkit.exception import RequestFailed  # here, as in ``github.calling``

        earlier = await find_review(pr, marker, author)
        if earlier is not None:
            return earlier
        async with pr.client() as gh:

            async def create(event: str, text: str) -> Any:
                return await gh.rest.pulls.async_create_review(
                    owner,
                    name,
                    pr.number,
                    body=f"{text}\n\n{marker}",
                    event=event,
                    comments=[c.wire() for c in comments],
                    **({"commit_id": commit_id} if commit_id else {}),
                )

            try:
                answer = await create(event, body)
            except RequestFailed as exc:
                # GitHub lets nobody approve or request changes on their own pull request (a token connection of
                # the author): the review is posted as a comment, its verdict said in its text.
                if (
                    event == "COMMENT"
                    or exc.response.status_code != 422
                    or OWN_PULL not in exc.response.raw_response.text.lower()
                ):
                    raise
                answer = await create("COMMENT", f"{body}\n\n{_OWN_PULL_NOTE[event]}")
        review = answer.parsed_data
        return PostedReview(review.id, _submitted(review.submitted_at), found=False)

    return await retrying(f"post a review on {pr.full_name}#{pr.number}", pr.connection.host, once, pr.clock)


def _submitted(value: Any) -> datetime:
    return value if isinstance(value, datetime) else datetime.now(UTC)
