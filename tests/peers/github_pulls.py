"""The GitHub emulator's pull request review routes: a pull request's files (with their patches), its reviews, a
new review with inline comments, and faults on demand (a 5xx, a rate limit with its reset headers).

Routes, under ``/api/v3``: ``GET /repos/{owner}/{repo}/pulls/{n}/files``, ``GET .../pulls/{n}/reviews``, ``POST
.../pulls/{n}/reviews``. A request is authorised by a token minted by the emulator for that repository with
``pull_requests: write`` (not revoked, not expired) or by a personal token; a comment on a line that is not in the
diff is refused 422 as GitHub refuses it. Answers parse as githubkit's ``DiffEntry`` and ``PullRequestReview``
(``tests/unit/forges/test_github_emulator.py``).
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

_HUNK_NEW = "@@ -{old},{n} +{new},{n} @@"


@dataclass
class Pull:
    files: dict[str, str]  # filename -> patch
    reviews: list[dict[str, Any]] = field(default_factory=list)


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
class Pulls:
    pulls: dict[tuple[str, int], Pull] = field(default_factory=dict)
    faults: list[Fault] = field(default_factory=list)
    seen: list[tuple[str, float]] = field(default_factory=list)  # (METHOD path, when), each request
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(9001))

    def add(self, full_name: str, number: int, files: dict[str, str]) -> Pull:
        pull = Pull(files)
        self.pulls[(full_name, number)] = pull
        return pull

    def next_id(self) -> int:
        return next(self._ids)


def added_patch(start: int, count: int, old: int = 1) -> str:
    """A hunk adding ``count`` lines at ``start`` of the new file (each line its number)."""
    lines = "\n".join(f"+line {n}" for n in range(start, start + count))
    return f"@@ -{old},0 +{start},{count} @@\n{lines}"


def diff_entry(gh: GitHubEmulator, full_name: str, filename: str, patch: str) -> dict[str, Any]:
    added = sum(1 for line in patch.splitlines() if line.startswith("+"))
    raw = f"{gh.base}/{full_name}/raw/head/{filename}"
    return {
        "sha": "0" * 40, "filename": filename, "status": "modified", "additions": added, "deletions": 0,
        "changes": added, "blob_url": raw, "raw_url": raw,
        "contents_url": f"{gh.api_url}/repos/{full_name}/contents/{filename}", "patch": patch,
    }  # fmt: skip


def review_json(gh: GitHubEmulator, full_name: str, number: int, review: dict[str, Any]) -> dict[str, Any]:
    html = f"{gh.base}/{full_name}/pull/{number}#pullrequestreview-{review['id']}"
    pr = f"{gh.api_url}/repos/{full_name}/pulls/{number}"
    return {
        "id": review["id"], "node_id": f"PRR_{review['id']}", "user": gh._user("hangar-bot", "Bot"),
        "body": review["body"], "state": review["state"], "html_url": html, "pull_request_url": pr,
        "_links": {"html": {"href": html}, "pull_request": {"href": pr}}, "submitted_at": review["submitted_at"],
        "commit_id": review["commit_id"], "author_association": "NONE",
    }  # fmt: skip


_STATES = {"APPROVE": "APPROVED", "REQUEST_CHANGES": "CHANGES_REQUESTED", "COMMENT": "COMMENTED"}


def _lines(patch: str) -> set[int]:
    found: set[int] = set()
    at = None
    for text in patch.splitlines():
        if text.startswith("@@"):
            at = int(text.split("+", 1)[1].split(",", 1)[0].split(" ", 1)[0])
        elif at is not None and not text.startswith(("-", "\\")):
            found.add(at)
            at += 1
    return found


def routes(gh: GitHubEmulator, api: str) -> list[Route]:
    pulls: Pulls = gh.pulls

    def allowed(request: Request, full_name: str) -> bool:
        token = gh._token_of(request)
        if token is not None and token in gh.user_tokens:
            return True
        return any(
            m.token == token and gh.token_allows(m.token, full_name) and m.permissions.get("pull_requests") == "write"
            for m in gh.minted
        )

    def fault(request: Request, after: bool = False) -> Response | None:
        what = f"{request.method} {request.url.path.removeprefix(api)}"
        if not after:
            pulls.seen.append((what, time.time()))
        for f in pulls.faults:
            if what.startswith(f.match) and f.after == after:
                pulls.faults.remove(f)
                return JSONResponse({"message": f.message}, status_code=f.status, headers=f.headers)
        return None

    def target(request: Request) -> tuple[str, int, Pull | None]:
        full = f"{request.path_params['owner']}/{request.path_params['repo']}"
        number = int(request.path_params["number"])
        return full, number, pulls.pulls.get((full, number))

    def opened(request: Request, what: str) -> tuple[str, int, Pull] | Response:
        """The request's pull request, or the answer refusing it (a fault, bad credentials, no such pull)."""
        full, number, pull = target(request)
        gh.requests.append(f"{request.method} /repos/{full}/pulls/{number}/{what}")
        if (answer := fault(request)) is not None:
            return answer
        if not allowed(request, full):
            return JSONResponse({"message": "Bad credentials"}, status_code=401)
        if pull is None:
            return JSONResponse({"message": "Not Found"}, status_code=404)
        return full, number, pull

    def page_of(request: Request, items: list[dict[str, Any]]) -> Response:
        per_page = int(request.query_params.get("per_page", 30))
        page = int(request.query_params.get("page", 1))
        return JSONResponse(items[(page - 1) * per_page : page * per_page])

    async def files(request: Request) -> Response:
        found = opened(request, "files")
        if isinstance(found, Response):
            return found
        full, _number, pull = found
        return page_of(request, [diff_entry(gh, full, name, patch) for name, patch in pull.files.items()])

    async def reviews(request: Request) -> Response:
        found = opened(request, "reviews")
        if isinstance(found, Response):
            return found
        full, number, pull = found
        if request.method == "GET":
            return page_of(request, [review_json(gh, full, number, r) for r in pull.reviews])
        body = await request.json()
        for c in body.get("comments", []):
            if c.get("line") not in _lines(pull.files.get(c.get("path"), "")):
                refusal = "Unprocessable Entity: Pull request review thread line must be part of the diff"
                return JSONResponse({"message": refusal, "errors": [], "documentation_url": ""}, status_code=422)
        review = {
            "id": pulls.next_id(),
            "body": body.get("body", ""),
            "state": _STATES.get(body.get("event", ""), "PENDING"),
            "event": body.get("event"),
            "comments": list(body.get("comments", [])),
            "commit_id": body.get("commit_id") or "f" * 40,
            "submitted_at": datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z"),
        }
        pull.reviews.append(review)
        if (answer := fault(request, after=True)) is not None:
            return answer
        return JSONResponse(review_json(gh, full, number, review))

    base = f"{api}/repos/{{owner}}/{{repo}}/pulls/{{number:int}}"
    return [
        Route(f"{base}/files", files),
        Route(f"{base}/reviews", reviews, methods=["GET", "POST"]),
    ]
