"""A small, real fake of GitHub's REST API for the forge part's tests, on loopback.

The forge part talks to GitHub through githubkit's real client, and what must be proven is the conversation on
the wire: an app's JWT (RS256, signed with the app's private key, checked here with its public key: issuer, issue
and expiry times), installation tokens asked for one installation and narrowed to named repositories and
permissions, their revocation, a token's owner. Answers are shaped as GitHub's (githubkit's typed models parse
them; ``tests/unit/forges/test_github_emulator.py`` checks that against the models themselves).

Routes, under ``/api/v3`` (a GitHub Enterprise Server's API path): ``GET /app/installations``, ``GET
/repos/{owner}/{repo}/installation``, ``POST /app/installations/{id}/access_tokens``, ``DELETE
/installation/token``, ``GET /user``; pull requests (``tests.peers.github_pulls``, added with ``add_pull``):
``GET /repos/{owner}/{repo}/pulls``, ``.../pulls/{n}``, ``.../pulls/{n}/files``, ``.../commits/{ref}/check-runs``,
``.../commits/{ref}/statuses``, and reviews (``tests.peers.github_reviews``: ``GET`` and ``POST
.../pulls/{n}/reviews``), each with an installation token minted for the repository or a personal token.
``outages`` makes the next pull-request answers 5xx; ``rate_limited_until`` answers 403 with GitHub's
rate-limit headers until then; ``tests.peers.github_pulls.deliver`` posts a signed webhook delivery the way GitHub
does. ``token_allows(token, "owner/name")`` is what the git server in front of the repositories asks
(``tests.peers.git_http.GitHttp.authorize``): a token minted here, not revoked, not expired, for that repository.
"""

from __future__ import annotations

import contextlib
import itertools
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import jwt
import uvicorn
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.peers.github_pulls import Pull, pull_routes
from tests.peers.github_reviews import Reviews, review_routes
from tests.support.serving import serving

API = "/api/v3"
STAMP = "2026-01-01T00:00:00Z"


def new_app_key() -> tuple[str, str]:
    """A fresh RSA key pair for an app: (private PEM, public PEM)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    public = (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    return private, public


@dataclass
class Minted:
    token: str
    installation_id: int
    repositories: tuple[str, ...]  # owner/name
    permissions: dict[str, str]
    expires_at: datetime
    revoked: bool = False


@dataclass
class GitHubEmulator:
    base: str = ""
    apps: dict[int, str] = field(default_factory=dict)  # app id -> public key PEM
    installations: dict[int, dict[str, Any]] = field(default_factory=dict)  # id -> {app_id, account, repos}
    user_tokens: dict[str, str] = field(default_factory=dict)  # personal token -> login
    minted: list[Minted] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)  # "GET /app/installations app:<id>"
    pulls: dict[tuple[str, int], Pull] = field(default_factory=dict)  # (owner/name, number) -> the pull request
    reviews: Reviews = field(default_factory=Reviews)  # the pull requests' reviews (``tests.peers.github_reviews``)
    outages: int = 0  # the next this many pull-request answers are 502
    rate_limited_until: int | None = None  # epoch seconds: pull-request answers are 403 rate-limited before it
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(41))

    @property
    def api_url(self) -> str:
        return f"{self.base}{API}"

    def add_app(self, app_id: int) -> str:
        """Register an app; answers its private key (PEM), the one a workspace connects with."""
        private, public = new_app_key()
        self.apps[app_id] = public
        return private

    def install(self, app_id: int, account: str, repos: list[str]) -> int:
        """Install the app on ``account`` for the repositories ``repos`` (names); answers the installation id."""
        installation_id = next(self._ids)
        self.installations[installation_id] = {"app_id": app_id, "account": account, "repos": set(repos)}
        return installation_id

    def add_pull(self, full_name: str, number: int, **fields: Any) -> Pull:
        """A pull request of ``full_name`` (see ``Pull`` for its fields); answers it, to change later."""
        pull = Pull(full_name=full_name, number=number, **fields)
        self.pulls[(full_name, number)] = pull
        return pull

    def reads(self, token: str | None, full_name: str) -> bool:
        """A token that may read ``full_name``: minted for it (live) or a personal token."""
        return token is not None and (token in self.user_tokens or self.token_allows(token, full_name))

    def token_allows(self, token: str, full_name: str) -> bool:
        now = datetime.now(UTC)
        return any(
            m.token == token and not m.revoked and m.expires_at > now and full_name in m.repositories
            for m in self.minted
        )

    # -- shapes ----------------------------------------------------------------------------------------------

    def user_json(self, login: str, kind: str = "Organization") -> dict[str, Any]:
        url = f"{self.api_url}/users/{login}"
        return {
            "login": login, "id": abs(hash(login)) % 10**6, "node_id": f"U_{login}", "avatar_url": f"{url}.png",
            "gravatar_id": "", "url": url, "html_url": f"{self.base}/{login}", "followers_url": f"{url}/followers",
            "following_url": f"{url}/following{{/other_user}}", "gists_url": f"{url}/gists{{/gist_id}}",
            "starred_url": f"{url}/starred{{/owner}}{{/repo}}", "subscriptions_url": f"{url}/subscriptions",
            "organizations_url": f"{url}/orgs", "repos_url": f"{url}/repos", "events_url": f"{url}/events{{/privacy}}",
            "received_events_url": f"{url}/received_events", "type": kind, "site_admin": False,
        }  # fmt: skip

    def installation_json(self, installation_id: int) -> dict[str, Any]:
        found = self.installations[installation_id]
        return {
            "id": installation_id,
            "account": self.user_json(found["account"]),
            "repository_selection": "selected",
            "access_tokens_url": f"{self.api_url}/app/installations/{installation_id}/access_tokens",
            "repositories_url": f"{self.api_url}/installation/repositories",
            "html_url": f"{self.base}/settings/installations/{installation_id}",
            "app_id": found["app_id"],
            "target_id": 1,
            "target_type": "Organization",
            "permissions": {"contents": "write", "pull_requests": "write", "metadata": "read"},
            "events": [],
            "created_at": STAMP,
            "updated_at": STAMP,
            "single_file_name": None,
            "app_slug": "hangar",
            "suspended_by": None,
            "suspended_at": None,
        }

    def public_user_json(self, login: str) -> dict[str, Any]:
        return {
            **self.user_json(login, "User"), "name": login, "company": None, "blog": "", "location": None,
            "email": None, "hireable": None, "bio": None, "public_repos": 0, "public_gists": 0, "followers": 0,
            "following": 0, "created_at": STAMP, "updated_at": STAMP,
        }  # fmt: skip

    # -- authentication --------------------------------------------------------------------------------------

    def _app_of(self, request: Request) -> int | None:
        """The app whose JWT authenticates the request (RS256, its public key, iss, iat, exp), else None."""
        scheme, _, credential = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer":
            return None
        try:
            claims = jwt.decode(credential, options={"verify_signature": False})
            app_id = int(claims["iss"])
            jwt.decode(credential, self.apps[app_id], algorithms=["RS256"], options={"require": ["iat", "exp", "iss"]})
        except (jwt.PyJWTError, KeyError, ValueError, TypeError):
            return None
        return app_id

    def app_slug(self, app_id: int) -> str:
        return f"hangar-app-{app_id}"

    def login_of(self, token: str | None) -> str | None:
        """Who a token acts as: a personal token's owner, a minted token's app bot (``<slug>[bot]``)."""
        if token is None:
            return None
        if token in self.user_tokens:
            return self.user_tokens[token]
        for m in self.minted:
            if m.token == token:
                return f"{self.app_slug(self.installations[m.installation_id]['app_id'])}[bot]"
        return None

    def token_of(self, request: Request) -> str | None:
        scheme, _, credential = request.headers.get("authorization", "").partition(" ")
        return credential if scheme.lower() in ("token", "bearer") else None

    # -- routes ----------------------------------------------------------------------------------------------

    def app(self) -> Starlette:
        def denied() -> JSONResponse:
            return JSONResponse({"message": "Bad credentials", "status": "401"}, status_code=401)

        def missing() -> JSONResponse:
            return JSONResponse({"message": "Not Found", "status": "404"}, status_code=404)

        async def installations(request: Request) -> Response:
            app_id = self._app_of(request)
            self.requests.append(f"GET /app/installations app:{app_id}")
            if app_id is None:
                return denied()
            return JSONResponse(
                [self.installation_json(i) for i, v in self.installations.items() if v["app_id"] == app_id]
            )

        async def repo_installation(request: Request) -> Response:
            app_id = self._app_of(request)
            full = f"{request.path_params['owner']}/{request.path_params['repo']}"
            self.requests.append(f"GET /repos/{full}/installation app:{app_id}")
            if app_id is None:
                return denied()
            for i, v in self.installations.items():
                owner, name = full.split("/", 1)
                if v["app_id"] == app_id and v["account"] == owner and name in v["repos"]:
                    return JSONResponse(self.installation_json(i))
            return missing()

        async def access_tokens(request: Request) -> Response:
            app_id = self._app_of(request)
            installation_id = int(request.path_params["installation_id"])
            self.requests.append(f"POST /app/installations/{installation_id}/access_tokens app:{app_id}")
            found = self.installations.get(installation_id)
            if app_id is None:
                return denied()
            if found is None or found["app_id"] != app_id:
                return missing()
            body = await request.json()
            names = list(body.get("repositories") or found["repos"])
            if not set(names) <= found["repos"]:
                refusal = "There is at least one repository that is not accessible to the parent installation."
                return JSONResponse({"message": refusal, "documentation_url": "", "errors": []}, status_code=422)
            permissions = dict(body.get("permissions") or {})
            minted = Minted(
                "ghs_" + secrets.token_hex(18),
                installation_id,
                tuple(f"{found['account']}/{n}" for n in names),
                permissions,
                datetime.now(UTC).replace(microsecond=0) + timedelta(hours=1),
            )
            self.minted.append(minted)
            return JSONResponse(
                {
                    "token": minted.token,
                    "expires_at": minted.expires_at.isoformat().replace("+00:00", "Z"),
                    "permissions": permissions,
                    "repository_selection": "selected",
                },
                status_code=201,
            )

        async def revoke(request: Request) -> Response:
            token = self.token_of(request)
            self.requests.append("DELETE /installation/token")
            live = [m for m in self.minted if m.token == token and not m.revoked]
            if not live:
                return denied()
            for m in live:
                m.revoked = True
            return Response(status_code=204)

        async def authenticated_app(request: Request) -> Response:
            app_id = self._app_of(request)
            self.requests.append(f"GET /app app:{app_id}")
            if app_id is None:
                return denied()
            slug = self.app_slug(app_id)
            return JSONResponse(
                {
                    "id": app_id, "slug": slug, "node_id": f"A_{app_id}", "name": slug, "description": "",
                    "owner": self.user_json("acme"), "external_url": self.base, "html_url": f"{self.base}/apps/{slug}",
                    "created_at": STAMP, "updated_at": STAMP, "permissions": {}, "events": [],
                }
            )  # fmt: skip

        async def user(request: Request) -> Response:
            token = self.token_of(request)
            self.requests.append("GET /user")
            if token is None or token not in self.user_tokens:
                return denied()
            return JSONResponse(self.public_user_json(self.user_tokens[token]))

        return Starlette(
            routes=[
                Route(f"{API}/app/installations", installations),
                Route(f"{API}/repos/{{owner}}/{{repo}}/installation", repo_installation),
                Route(
                    f"{API}/app/installations/{{installation_id:int}}/access_tokens", access_tokens, methods=["POST"]
                ),
                Route(f"{API}/installation/token", revoke, methods=["DELETE"]),
                Route(f"{API}/user", user),
                Route(f"{API}/app", authenticated_app),
                *pull_routes(self, API),
                *review_routes(self, API),
            ]
        )


@contextlib.asynccontextmanager
async def github_emulator() -> AsyncIterator[GitHubEmulator]:
    emulator = GitHubEmulator()
    config = uvicorn.Config(emulator.app(), host="127.0.0.1", port=0, log_level="warning", lifespan="off")
    async with serving(config) as port:
        emulator.base = f"http://127.0.0.1:{port}"
        yield emulator
