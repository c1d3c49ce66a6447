"""The GitHub API emulator's pull requests: their REST routes, shaped as GitHub answers them (githubkit's typed
models parse them: ``tests/unit/forges/test_github_emulator.py``), and webhook deliveries signed as GitHub signs
them (``X-Hub-Signature-256``: HMAC-SHA256 of the body with the hook's secret).

A ``Pull`` is what a test sets (title, author, branches, commits, files, check runs, statuses); changing it and
delivering (or letting Hangar poll) is how a pull request is opened, pushed to, closed, or made to vanish
(``del emulator.pulls[...]``: its routes answer 404).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import httpx
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

if TYPE_CHECKING:
    from tests.peers.github_emulator import GitHubEmulator

STAMP = "2026-01-01T00:00:00Z"
_REPO_URLS = (
    "archive", "assignees", "blobs", "branches", "collaborators", "comments", "commits", "compare", "contents",
    "contributors", "deployments", "downloads", "events", "forks", "git_commits", "git_refs", "git_tags",
    "issue_comment", "issue_events", "issues", "keys", "labels", "languages", "merges", "milestones",
    "notifications", "pulls", "releases", "stargazers", "statuses", "subscribers", "subscription", "tags", "teams",
    "trees", "hooks",
)  # fmt: skip


@dataclass
class Pull:
    full_name: str
    number: int
    title: str = "A change"
    author: str = "ada"
    body: str | None = None
    base_ref: str = "main"
    base_sha: str = "0" * 40
    head_ref: str = "feature"
    head_sha: str = "1" * 40
    state: str = "open"  # open, closed
    merged: bool = False
    draft: bool = False
    # {"filename", "status", "additions", "deletions", "patch"?}
    files: list[dict[str, Any]] = field(default_factory=list)
    # {"name", "status", "conclusion"}
    check_runs: list[dict[str, Any]] = field(default_factory=list)
    # {"context", "state", "description"}
    statuses: list[dict[str, Any]] = field(default_factory=list)


def signature(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


async def deliver(
    url: str,
    event: str,
    payload: dict[str, Any] | bytes,
    secret: str | None,
    *,
    delivery: str | None = None,
    sign_with: str | None = None,
) -> httpx.Response:
    """POST a webhook delivery as GitHub does: the event, a delivery id, the body signed with ``secret`` (or with
    ``sign_with`` instead, or unsigned when both are None)."""
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    headers = {
        "Content-Type": "application/json",
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
        "User-Agent": "GitHub-Hookshot/emulator",
    }
    key = sign_with if sign_with is not None else secret
    if key is not None:
        headers["X-Hub-Signature-256"] = signature(key, body)
    async with httpx.AsyncClient(timeout=30) as client:
        return await client.post(url, content=body, headers=headers)


def webhook_payload(gh: GitHubEmulator, pull: Pull, action: str) -> dict[str, Any]:
    """A ``pull_request`` event's payload (what Hangar reads of it: the action, the number, the repository)."""
    return {
        "action": action,
        "number": pull.number,
        "pull_request": pull_json(gh, pull),
        "repository": repo_json(gh, pull.full_name),
        "sender": gh.user_json(pull.author, "User"),
    }


def repo_json(gh: GitHubEmulator, full_name: str) -> dict[str, Any]:
    owner, name = full_name.split("/", 1)
    api = f"{gh.api_url}/repos/{full_name}"
    shape: dict[str, Any] = {f"{u}_url": f"{api}/{u}" for u in _REPO_URLS}
    shape |= {
        "id": abs(hash(full_name)) % 10**6, "node_id": f"R_{name}", "name": name, "full_name": full_name,
        "license": None, "forks": 0, "owner": gh.user_json(owner), "private": True,
        "html_url": f"{gh.base}/{full_name}", "description": None, "fork": False, "url": api,
        "git_url": f"git://{full_name}.git", "ssh_url": f"git@example:{full_name}.git",
        "clone_url": f"{gh.base}/{full_name}.git", "mirror_url": None, "svn_url": f"{gh.base}/{full_name}",
        "homepage": None, "language": None, "forks_count": 0, "stargazers_count": 0, "watchers_count": 0,
        "size": 1, "default_branch": "main", "open_issues_count": 0, "has_pages": False, "disabled": False,
        "pushed_at": STAMP, "created_at": STAMP, "updated_at": STAMP, "open_issues": 0, "watchers": 0,
    }  # fmt: skip
    return shape


def _branch(gh: GitHubEmulator, pull: Pull, ref: str, sha: str) -> dict[str, Any]:
    owner = pull.full_name.split("/", 1)[0]
    return {
        "label": f"{owner}:{ref}",
        "ref": ref,
        "sha": sha,
        "repo": repo_json(gh, pull.full_name),
        "user": gh.user_json(owner),
    }


def pull_json(gh: GitHubEmulator, pull: Pull, *, simple: bool = False) -> dict[str, Any]:
    api = f"{gh.api_url}/repos/{pull.full_name}"
    html = f"{gh.base}/{pull.full_name}/pull/{pull.number}"
    merged = pull.merged and pull.state == "closed"

    def link(href: str) -> dict[str, str]:
        return {"href": href}

    shape: dict[str, Any] = {
        "url": f"{api}/pulls/{pull.number}", "id": pull.number + 1000, "node_id": f"PR_{pull.number}",
        "html_url": html, "diff_url": f"{html}.diff", "patch_url": f"{html}.patch",
        "issue_url": f"{api}/issues/{pull.number}", "commits_url": f"{api}/pulls/{pull.number}/commits",
        "review_comments_url": f"{api}/pulls/{pull.number}/comments",
        "review_comment_url": f"{api}/pulls/comments{{/number}}",
        "comments_url": f"{api}/issues/{pull.number}/comments", "statuses_url": f"{api}/statuses/{pull.head_sha}",
        "number": pull.number, "state": pull.state, "locked": False, "title": pull.title,
        "user": gh.user_json(pull.author, "User"), "body": pull.body, "labels": [], "milestone": None,
        "created_at": STAMP, "updated_at": STAMP, "closed_at": STAMP if pull.state == "closed" else None,
        "merged_at": STAMP if merged else None, "merge_commit_sha": None, "draft": pull.draft,
        "head": _branch(gh, pull, pull.head_ref, pull.head_sha),
        "base": _branch(gh, pull, pull.base_ref, pull.base_sha),
        "_links": {
            "comments": link(f"{api}/issues/{pull.number}/comments"),
            "commits": link(f"{api}/pulls/{pull.number}/commits"),
            "statuses": link(f"{api}/statuses/{pull.head_sha}"), "html": link(html),
            "issue": link(f"{api}/issues/{pull.number}"),
            "review_comments": link(f"{api}/pulls/{pull.number}/comments"),
            "review_comment": link(f"{api}/pulls/comments{{/number}}"), "self": link(f"{api}/pulls/{pull.number}"),
        },
        "author_association": "MEMBER", "auto_merge": None,
    }  # fmt: skip
    if not simple:
        shape |= {
            "merged": merged, "mergeable": None, "mergeable_state": "unknown", "merged_by": None, "comments": 0,
            "review_comments": 0, "maintainer_can_modify": False, "commits": 1,
            "additions": sum(int(f.get("additions", 0)) for f in pull.files),
            "deletions": sum(int(f.get("deletions", 0)) for f in pull.files), "changed_files": len(pull.files),
        }  # fmt: skip
    return shape


def file_json(gh: GitHubEmulator, pull: Pull, entry: dict[str, Any]) -> dict[str, Any]:
    name = entry["filename"]
    base = f"{gh.base}/{pull.full_name}"
    additions, deletions = int(entry.get("additions", 0)), int(entry.get("deletions", 0))
    shape = {
        "sha": hashlib.sha1(name.encode()).hexdigest(), "filename": name, "status": entry.get("status", "modified"),
        "additions": additions, "deletions": deletions, "changes": additions + deletions,
        "blob_url": f"{base}/blob/{pull.head_sha}/{name}", "raw_url": f"{base}/raw/{pull.head_sha}/{name}",
        "contents_url": f"{gh.api_url}/repos/{pull.full_name}/contents/{name}?ref={pull.head_sha}",
    }  # fmt: skip
    if "patch" in entry:
        shape["patch"] = entry["patch"]
    return shape


def check_run_json(gh: GitHubEmulator, pull: Pull, index: int, run: dict[str, Any]) -> dict[str, Any]:
    url = f"{gh.api_url}/repos/{pull.full_name}/check-runs/{index + 1}"
    return {
        "id": index + 1, "head_sha": pull.head_sha, "node_id": f"CR_{index + 1}", "external_id": None, "url": url,
        "html_url": f"{gh.base}/{pull.full_name}/runs/{index + 1}", "details_url": None,
        "status": run.get("status", "completed"), "conclusion": run.get("conclusion"),
        "started_at": STAMP, "completed_at": STAMP if run.get("status", "completed") == "completed" else None,
        "output": {"title": None, "summary": None, "text": None, "annotations_count": 0,
                   "annotations_url": f"{url}/annotations"},
        "name": run["name"], "check_suite": {"id": 1}, "app": None, "pull_requests": [],
    }  # fmt: skip


def status_json(gh: GitHubEmulator, pull: Pull, index: int, entry: dict[str, Any]) -> dict[str, Any]:
    return {
        "url": f"{gh.api_url}/repos/{pull.full_name}/statuses/{pull.head_sha}", "avatar_url": None,
        "id": index + 1, "node_id": f"S_{index + 1}", "state": entry.get("state", "success"),
        "description": entry.get("description"), "target_url": entry.get("target_url"),
        "context": entry["context"], "created_at": STAMP, "updated_at": STAMP, "creator": None,
    }  # fmt: skip


def pull_routes(gh: GitHubEmulator, api: str) -> list[Route]:
    def refused(request: Request, full_name: str) -> Response | None:
        gh.requests.append(f"GET {request.url.path.removeprefix(api)}")
        if gh.outages > 0:
            gh.outages -= 1
            return JSONResponse({"message": "Server Error"}, status_code=502)
        if gh.rate_limited_until is not None and time.time() < gh.rate_limited_until:
            headers = {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(gh.rate_limited_until)}
            return JSONResponse({"message": "API rate limit exceeded"}, status_code=403, headers=headers)
        if not gh.reads(gh.token_of(request), full_name):
            return JSONResponse({"message": "Bad credentials", "status": "401"}, status_code=401)
        return None

    def named(request: Request) -> str:
        return f"{request.path_params['owner']}/{request.path_params['repo']}"

    def missing() -> JSONResponse:
        return JSONResponse({"message": "Not Found", "status": "404"}, status_code=404)

    async def pulls(request: Request) -> Response:
        full_name = named(request)
        if (no := refused(request, full_name)) is not None:
            return no
        wanted = request.query_params.get("state", "open")
        found = [p for (n, _), p in sorted(gh.pulls.items()) if n == full_name and wanted in (p.state, "all")]
        return JSONResponse([pull_json(gh, p, simple=True) for p in found])

    def pull_of(request: Request) -> Pull | Response:
        full_name = named(request)
        if (no := refused(request, full_name)) is not None:
            return no
        return gh.pulls.get((full_name, int(request.path_params["number"]))) or missing()

    async def pull(request: Request) -> Response:
        found = pull_of(request)
        return found if isinstance(found, Response) else JSONResponse(pull_json(gh, found))

    async def files(request: Request) -> Response:
        found = pull_of(request)
        if isinstance(found, Response):
            return found
        size = min(100, int(request.query_params.get("per_page", "30")))  # GitHub's default page and largest
        first = (int(request.query_params.get("page", "1")) - 1) * size
        return JSONResponse([file_json(gh, found, f) for f in found.files[first : first + size]])

    def by_head(request: Request) -> Pull | Response:
        full_name = named(request)
        if (no := refused(request, full_name)) is not None:
            return no
        ref = request.path_params["ref"]
        for (n, _), p in gh.pulls.items():
            if n == full_name and p.head_sha == ref:
                return p
        return missing()

    async def check_runs(request: Request) -> Response:
        found = by_head(request)
        if isinstance(found, Response):
            return found
        runs = [check_run_json(gh, found, i, r) for i, r in enumerate(found.check_runs)]
        return JSONResponse({"total_count": len(runs), "check_runs": runs})

    async def statuses(request: Request) -> Response:
        found = by_head(request)
        if isinstance(found, Response):
            return found
        return JSONResponse([status_json(gh, found, i, s) for i, s in enumerate(found.statuses)])

    repo = f"{api}/repos/{{owner}}/{{repo}}"
    return [
        Route(f"{repo}/pulls", pulls),
        Route(f"{repo}/pulls/{{number:int}}", pull),
        Route(f"{repo}/pulls/{{number:int}}/files", files),
        Route(f"{repo}/commits/{{ref}}/check-runs", check_runs),
        Route(f"{repo}/commits/{{ref}}/statuses", statuses),
    ]
