"""The GitHub emulator's pull request reviews: the reviews of a pull request (``tests.peers.github_pulls``' pulls),
a new review with inline comments, and faults on demand for these routes (a 5xx, a rate limit with its reset
headers, an answer lost after the review was stored).

Routes, under ``/api/v3``: ``GET`` and ``POST /repos/{owner}/{repo}/pulls/{n}/reviews``. A request is authorised
by a token minted by the emulator for that repository with ``pull_requests: write`` (live) or by a personal
token; a comment on a line that is not in the pull request's diff, and a personal token approving or requesting
changes on its owner's own pull request, are refused 422 as GitHub refuses them. Answers
parse as githubkit's ``PullRequestReview`` (``tests/unit/forges/test_github_emulator.py``).
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

if TYPE_CHECKING:
    from tests.peers.github_emulator import GitHubEmulator

_STATES = {"APPROVE": "APPROVED", "REQUEST_CHANGES": "CHANGES_REQUESTED", "COMMENT": "COMMENTED"}


@dataclass
class Fault:
    """Answered to the next request whose ``METHOD path`` starts with ``match``: instead of doing it, or with
    ``after`` once it is done (a review stored, then a 502 as a proxy in front may give)."""

    match: str
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    message: str = "Server Error"
    after: bool = False


@dataclass
class Reviews:
    posted: dict[tuple[str, int], list[dict[str, Any]]] = field(default_factory=dict)  # (owner/name, n) -> reviews
    faults: list[Fault] = field(default_factory=list)
    seen: list[tuple[str, float]] = field(default_factory=list)  # (METHOD path, when), each request
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(9001))

    def of(self, full_name: str, number: int) -> list[dict[str, Any]]:
        return self.posted.setdefault((full_name, number), [])

    def add(self, full_name: str, number: int, user: str, body: str, event: str = "COMMENT") -> dict[str, Any]:
        """A review someone else posted (the pull request's author, another reviewer), as its ``user``."""
        review = {
            "id": next(self._ids), "user": user, "body": body, "state": _STATES[event], "event": event,
            "comments": [], "commit_id": "1" * 40,
            "submitted_at": datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z"),
        }  # fmt: skip
        self.of(full_name, number).append(review)
        return review


def added_patch(start: int, count: int, old: int = 1) -> str:
    """A hunk adding ``count`` lines at ``start`` of the new file."""
    lines = "\n".join(f"+line {n}" for n in range(start, start + count))
    return f"@@ -{old},0 +{start},{count} @@\n{lines}"


def added_file(name: str, start: int, count: int) -> dict[str, Any]:
    """A ``Pull.files`` entry adding ``count`` lines at ``start``."""
    return {"filename": name, "additions": count, "deletions": 0, "patch": added_patch(start, count)}


def diff_lines(patch: str) -> set[int]:
    found: set[int] = set()
    at = None
    for text in patch.splitlines():
        if text.startswith("@@"):
            at = int(text.split("+", 1)[1].split(",", 1)[0].split(" ", 1)[0])
        elif at is not None and not text.startswith(("-", "\\")):
            found.add(at)
            at += 1
    return found


def review_json(gh: GitHubEmulator, full_name: str, number: int, review: dict[str, Any]) -> dict[str, Any]:
    html = f"{gh.base}/{full_name}/pull/{number}#pullrequestreview-{review['id']}"
    kind = "Bot" if review["user"].endswith("[bot]") else "User"
    pr = f"{gh.api_url}/repos/{full_name}/pulls/{number}"
    return {
        "id": review["id"], "node_id": f"PRR_{review['id']}", "user": gh.user_json(review["user"], kind),
        "body": review["body"], "state": review["state"], "html_url": html, "pull_request_url": pr,
        "_links": {"html": {"href": html}, "pull_request": {"href": pr}}, "submitted_at": review["submitted_at"],
        "commit_id": review["commit_id"], "author_association": "NONE",
    }  # fmt: skip


def review_routes(gh: GitHubEmulator, api: str) -> list[Route]:
    book: Reviews = gh.reviews

    def allowed(request: Request, full_name: str) -> bool:
        token = gh.token_of(request)
        if token is not None and token in gh.user_tokens:
            return True
        return any(
            m.token == token and gh.token_allows(m.token, full_name) and m.permissions.get("pull_requests") == "write"
            for m in gh.minted
        )

    def fault(request: Request, after: bool = False) -> Response | None:
        what = f"{request.method} {request.url.path.removeprefix(api)}"
        if not after:
            book.seen.append((what, time.time()))
        for f in book.faults:
            if what.startswith(f.match) and f.after == after:
                book.faults.remove(f)
                return JSONResponse({"message": f.message}, status_code=f.status, headers=f.headers)
        return None

    def page_of(request: Request, items: list[dict[str, Any]]) -> Response:
        per_page = int(request.query_params.get("per_page", 30))
        page = int(request.query_params.get("page", 1))
        return JSONResponse(items[(page - 1) * per_page : page * per_page])

    async def reviews(request: Request) -> Response:
        full = f"{request.path_params['owner']}/{request.path_params['repo']}"
        number = int(request.path_params["number"])
        gh.requests.append(f"{request.method} /repos/{full}/pulls/{number}/reviews")
        if (answer := fault(request)) is not None:
            return answer
        if not allowed(request, full):
            return JSONResponse({"message": "Bad credentials"}, status_code=401)
        pull = gh.pulls.get((full, number))
        if pull is None:
            return JSONResponse({"message": "Not Found"}, status_code=404)
        posted = book.of(full, number)
        if request.method == "GET":
            return page_of(request, [review_json(gh, full, number, r) for r in posted])
        body = await request.json()
        login = gh.user_tokens.get(gh.token_of(request) or "")
        if login == pull.author and body.get("event") in ("APPROVE", "REQUEST_CHANGES"):
            verb = "approve" if body["event"] == "APPROVE" else "request changes on"
            refusal = f"Unprocessable Entity: Can not {verb} your own pull request"
            return JSONResponse({"message": refusal, "errors": [], "documentation_url": ""}, status_code=422)
        patches = {f["filename"]: f.get("patch", "") for f in pull.files}
        for c in body.get("comments", []):
            if c.get("line") not in diff_lines(patches.get(c.get("path"), "")):
                refusal = "Unprocessable Entity: Pull request review thread line must be part of the diff"
                return JSONResponse({"message": refusal, "errors": [], "documentation_url": ""}, status_code=422)
        review = {
            "id": next(book._ids),
            "user": gh.login_of(gh.token_of(request)) or "ghost",
            "body": body.get("body", ""),
            "state": _STATES.get(body.get("event", ""), "PENDING"),
            "event": body.get("event"),
            "comments": list(body.get("comments", [])),
            "commit_id": body.get("commit_id") or pull.head_sha,
            "submitted_at": datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z"),
        }
        posted.append(review)
        if (answer := fault(request, after=True)) is not None:
            return answer
        return JSONResponse(review_json(gh, full, number, review))

    return [Route(f"{api}/repos/{{owner}}/{{repo}}/pulls/{{number:int}}/reviews", reviews, methods=["GET", "POST"])]
