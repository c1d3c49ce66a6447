"""The deep-link page: shape-checked ids, no script, no store, a hand-over to the app with a manual button."""

from __future__ import annotations

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from hangar.chat.deeplink import ROUTES, http_origin, public_open_url
from hangar.config import Settings


@pytest.fixture
def client() -> TestClient:
    return TestClient(Starlette(routes=ROUTES))


@pytest.mark.parametrize("kind", ["spaces", "tickets"])
def test_a_valid_link_hands_over_to_the_app(client: TestClient, kind: str) -> None:
    resp = client.get(f"/open/workspaces/ws_1.A-b/{kind}/0f3c-9.x")
    assert resp.status_code == 200 and resp.headers["cache-control"] == "no-store"
    target = f"hangar://workspaces/ws_1.A-b/{kind}/0f3c-9.x"
    assert f'content="0;url={target}"' in resp.text and f'href="{target}"' in resp.text
    assert "<script" not in resp.text.lower()
    assert "default-src 'none'" in resp.headers["content-security-policy"]


@pytest.mark.parametrize(
    "path",
    [
        "/open/workspaces/ws/spaces/" + "a" * 129,
        "/open/workspaces/ws/spaces/a%20b",
        "/open/workspaces/ws/spaces/%3Cscript%3E",
        "/open/workspaces/w$s/spaces/a",
        "/open/workspaces/ws/rigs/a",
        "/open/workspaces/ws/spaces/a/b",
        "/open/workspaces/ws/spaces",
    ],
)
def test_anything_outside_the_pattern_is_404(client: TestClient, path: str) -> None:
    resp = client.get(path)
    assert resp.status_code == 404 and "hangar://" not in resp.text


def test_ids_of_128_characters_are_accepted(client: TestClient) -> None:
    assert client.get("/open/workspaces/" + "w" * 128 + "/tickets/" + "t" * 128).status_code == 200


def test_the_posted_link_derives_from_the_public_url() -> None:
    assert http_origin("wss://hangar.example") == "https://hangar.example"
    assert http_origin("ws://127.0.0.1:8420") == "http://127.0.0.1:8420"
    settings = Settings(public_url="http://127.0.0.1:9000/")
    assert public_open_url(settings, "ws", "spaces", "s1") == "http://127.0.0.1:9000/open/workspaces/ws/spaces/s1"
    assert public_open_url(Settings(), "ws", "spaces", "s1") is None
    public = Settings(public_url="https://h.example")
    assert public_open_url(public, "ws", "tickets", "t") == "https://h.example/open/workspaces/ws/tickets/t"
