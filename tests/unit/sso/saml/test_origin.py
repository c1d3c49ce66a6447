"""Which origin the SAML routes speak for: the public URL, else the listener, and only as a last resort the
request's own Host (a value the client chooses)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from starlette.requests import Request

from hangar.config import Settings
from hangar.sso.saml.routes import _origin


def _request(settings: Settings, host: str = "evil.example.net") -> Request:
    app = SimpleNamespace(state=SimpleNamespace(ctx=SimpleNamespace(settings=settings)))
    scope = {
        "type": "http",
        "method": "GET",
        "path": "/saml/login",
        "query_string": b"",
        "headers": [(b"host", host.encode())],
        "scheme": "http",
        "server": ("127.0.0.1", 8420),
        "app": app,
    }
    return Request(scope)


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        (Settings(public_url="https://hangar.example.com", port=8420), "https://hangar.example.com"),
        (Settings(host="127.0.0.1", port=8420), "http://127.0.0.1:8420"),
        (Settings(host="::1", port=8420), "http://[::1]:8420"),
        (Settings(host="0.0.0.0", port=8420), "http://evil.example.net"),
        (Settings(host="127.0.0.1", port=0), "http://evil.example.net"),
    ],
)
def test_origin_prefers_configuration_over_the_host_header(settings: Settings, expected: str) -> None:
    assert _origin(_request(settings)) == expected
