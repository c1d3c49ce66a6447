"""Credential hand-off targets, the origin allow-list, the popup page and the failure pages."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.testclient import TestClient

from hangar.config import Settings
from hangar.errors import InvalidArgs
from hangar.sso import handoff
from hangar.sso.errors import SsoError
from hangar.sso.handoff import LoginIntent


def make_app(settings: Settings) -> Starlette:
    async def start(request: Request) -> Response:
        try:
            intent = LoginIntent.from_request(request)
        except InvalidArgs as exc:
            return handoff.failure_response(request, SsoError("invalid", exc.message))
        return handoff.success_response(settings, intent, "hgr_tok/en+=")

    async def fail(request: Request) -> Response:
        return handoff.failure_response(request, SsoError("signature", "The <assertion> signature does not verify."))

    app = Starlette(routes=[Route("/start", start), Route("/fail", fail), *handoff.handoff_routes()])
    app.state.ctx = SimpleNamespace(settings=settings)
    return app


DEV = "http://localhost:5173"  # a web client in development, named by the configuration


def client(**settings: object) -> TestClient:
    settings = {"port": 8420, "trusted_origins": (DEV,), **settings}
    return TestClient(make_app(Settings(**settings)), base_url="http://127.0.0.1:8420", follow_redirects=False)


@pytest.mark.parametrize(
    ("query", "location"),
    [
        ("relay=desktop", "hangar://auth/complete#token=hgr_tok%2Fen%2B%3D"),
        ("", "/auth/complete#token=hgr_tok%2Fen%2B%3D"),
        ("relay=web-popup", "/auth/popup-complete#token=hgr_tok%2Fen%2B%3D"),
        (
            "relay=web-popup&client_origin=http://localhost:5173",
            "/auth/popup-complete?client_origin=http%3A%2F%2Flocalhost%3A5173#token=hgr_tok%2Fen%2B%3D",
        ),
        # An origin the allow-list does not trust is dropped, not honoured: a foreign site, and a loopback origin
        # on a port the configuration does not name (a rig's forwarded port).
        ("relay=web-popup&client_origin=https://evil.example", "/auth/popup-complete#token=hgr_tok%2Fen%2B%3D"),
        ("relay=web-popup&client_origin=http://localhost:8080", "/auth/popup-complete#token=hgr_tok%2Fen%2B%3D"),
        ("relay=web-popup&client_origin=http://127.0.0.1:5173", "/auth/popup-complete#token=hgr_tok%2Fen%2B%3D"),
    ],
)
def test_targets_without_a_web_client_url(query: str, location: str) -> None:
    resp = client().get(f"/start?{query}")
    assert resp.status_code == 303
    assert resp.headers["location"] == location
    assert resp.headers["cache-control"] == "no-store"


STATE = "Zq0-_" * 8 + "abc"  # 43 characters, the web client's shape


@pytest.mark.parametrize(
    ("query", "location"),
    [
        (f"relay=desktop&client_state={STATE}", f"hangar://auth/complete#token=hgr_tok%2Fen%2B%3D&state={STATE}"),
        (f"client_state={STATE}", f"/auth/complete#token=hgr_tok%2Fen%2B%3D&state={STATE}"),
        (f"relay=web-popup&client_state={STATE}", f"/auth/popup-complete#token=hgr_tok%2Fen%2B%3D&state={STATE}"),
    ],
)
def test_the_hand_off_echoes_the_client_state(query: str, location: str) -> None:
    resp = client().get(f"/start?{query}")
    assert resp.status_code == 303 and resp.headers["location"] == location
    echoed = client(web_client_url="https://app.example.com").get(f"/start?{query}")
    assert echoed.headers["location"] == f"https://app.example.com#token=hgr_tok%2Fen%2B%3D&state={STATE}"


@pytest.mark.parametrize("length", [16, 128])
def test_a_client_state_at_the_length_limits_is_accepted(length: int) -> None:
    resp = client().get(f"/start?relay=web-popup&client_state={'a' * length}")
    assert resp.status_code == 303 and resp.headers["location"].endswith(f"&state={'a' * length}")


@pytest.mark.parametrize("bad", ["a" * 15, "a" * 129, "a" * 20 + "%2F", "a" * 20 + ".", "a" * 20 + "%26token%3Dx"])
def test_a_malformed_client_state_is_refused_naming_it(bad: str) -> None:
    resp = client().get(f"/start?relay=web-popup&client_state={bad}", headers={"accept": "application/json"})
    assert resp.status_code == 400
    assert resp.json()["error"]["code"] == "invalid" and "client_state" in resp.json()["error"]["message"]


@pytest.mark.parametrize("query", ["relay=desktop", "", "relay=web-popup&client_origin=http://localhost:1"])
def test_web_client_url_origin_wins(query: str) -> None:
    resp = client(web_client_url="https://app.example.com/some/path").get(f"/start?{query}")
    assert resp.status_code == 303
    assert resp.headers["location"] == "https://app.example.com#token=hgr_tok%2Fen%2B%3D"


def test_unknown_relay_is_a_failure_page() -> None:
    resp = client().get("/start?relay=mobile", headers={"accept": "application/json"})
    assert resp.status_code == 400
    assert resp.json()["error"]["code"] == "invalid"
    assert "relay" in resp.json()["error"]["message"]


def test_failure_negotiates_json_or_html() -> None:
    c = client()
    as_json = c.get("/fail", headers={"accept": "application/json"})
    assert as_json.status_code == 400
    assert as_json.json() == {"error": {"code": "signature", "message": "The <assertion> signature does not verify."}}
    as_html = c.get("/fail", headers={"accept": "text/html"})
    assert as_html.status_code == 400 and as_html.headers["content-type"].startswith("text/html")
    assert "<code id='code'>signature</code>" in as_html.text
    assert "&lt;assertion&gt;" in as_html.text and "<assertion>" not in as_html.text


def test_allow_list_holds_only_what_the_configuration_names() -> None:
    settings = Settings(
        web_client_url="https://app.example.com",
        public_url="https://hangar.example.org",
        port=9000,
        trusted_origins=("http://localhost:5173",),
    )
    trusted = handoff.trusted_origins(settings)
    assert trusted == {
        "https://app.example.com",
        "https://hangar.example.org",
        "http://127.0.0.1:9000",
        "http://localhost:9000",
        "http://[::1]:9000",
        "http://localhost:5173",
    }
    for ok in ("https://APP.example.com:443", "http://localhost:5173", "http://LOCALHOST:9000", "http://[::1]:9000"):
        assert handoff.is_trusted_origin(ok, settings), ok
    for bad in (
        # Loopback on any other port: a rig's forwarded port, another program.
        "http://localhost:3000",
        "https://127.0.0.1",
        "http://[::1]:8080",
        "https://localhost:5173",
        # An address the server happens to be reached on is not configuration.
        "http://10.0.0.5:9000",
        "https://app.example.com.evil.net",
        "http://app.example.com",
        "https://user@app.example.com",
        "javascript:alert(1)",
        "null",
        "",
        None,
        "https://evil.example",
        "http://127.0.0.1.nip.io",
    ):
        assert not handoff.is_trusted_origin(bad, settings), bad


def _csp_target(page: str) -> str:
    found = re.search(r"postMessage\(\{type:\"hangar:sso\",token:[^}]*,state:[^}]*\},(\"[^\"]*\")\)", page)
    assert found, page
    return found.group(1).strip('"')


def test_popup_page_posts_only_to_trusted_origins() -> None:
    c = client(public_url="https://hangar.example.org")
    trusted = c.get(f"/auth/popup-complete?client_origin={DEV}")
    assert trusted.status_code == 200
    assert _csp_target(trusted.text) == DEV
    nonce = re.search(r"script-src 'nonce-([^']+)'", trusted.headers["content-security-policy"])
    assert nonce and f"nonce='{nonce.group(1)}'" in trusted.text
    # A crafted link naming a foreign origin posts to our own origin instead.
    crafted = c.get("/auth/popup-complete?client_origin=https://evil.example")
    assert _csp_target(crafted.text) == "https://hangar.example.org"
    assert "evil" not in crafted.text
    forwarded = c.get("/auth/popup-complete?client_origin=http://localhost:8080")
    assert _csp_target(forwarded.text) == "https://hangar.example.org"


def test_auth_complete_page_stores_nothing_and_hands_the_fragment_to_the_web_client() -> None:
    """Storing here would let anyone's ``/auth/complete#token=<their credential>`` replace this browser's
    credential; the web client at ``/`` decides (kept for a sign-in it started, else the person confirms)."""
    resp = client().get("/auth/complete")
    assert resp.status_code == 200
    assert "localStorage" not in resp.text and "hangar.token" not in resp.text
    assert "location.replace('/'+h)" in resp.text
    assert resp.headers["referrer-policy"] == "no-referrer"


def test_intent_round_trips() -> None:
    intent = LoginIntent(relay="web-popup", client_origin="http://localhost:1", client_state=STATE)
    assert LoginIntent.from_dict(intent.to_dict()) == intent
    # The oauth relay continues a flow of this server: no credential goes to a client, so no state is kept.
    oauth = LoginIntent.restore("oauth", None, "c" * 20, STATE)
    assert oauth.relay == "oauth" and oauth.client_state is None
    assert LoginIntent.restore("web-popup", None, None, "short").client_state is None
    assert LoginIntent.from_dict({"relay": "bogus", "client_origin": 5}) == LoginIntent()
    assert LoginIntent.from_dict(None) == LoginIntent()


def test_login_failures_carry_only_known_codes() -> None:
    assert SsoError("nonce", "x").sso_code == "nonce"
    assert SsoError("request_match", "x").detail_code == "request_match"
    with pytest.raises(ValueError):
        SsoError("oops", "x")
