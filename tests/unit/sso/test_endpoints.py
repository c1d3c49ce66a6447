"""The origin SSO values are built from: the public URL, else the listener, else (and only then) the request's."""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.requests import Request

from hangar.config import Settings
from hangar.sso.endpoints import configured_origin, shown_origin, sso_origin


def request_to(host: str) -> Request:
    return Request(
        {"type": "http", "scheme": "http", "method": "GET", "path": "/", "headers": [(b"host", host.encode())]}
    )


@pytest.mark.parametrize(
    ("settings", "configured", "shown", "from_request"),
    [
        ({"public_url": "https://hangar.example.com/"}, "https://hangar.example.com", "publicUrl", False),
        ({"host": "127.0.0.1", "port": 8420}, "http://127.0.0.1:8420", "listener", False),
        ({"host": "::1", "port": 8420}, "http://[::1]:8420", "listener", False),
        ({"host": "0.0.0.0", "port": 8420}, "http://127.0.0.1:8420", "request", True),
        ({"host": "::", "port": 8420}, "http://[::1]:8420", "request", True),
        ({"host": "127.0.0.1", "port": 0}, "http://127.0.0.1:0", "request", True),
    ],
)
def test_where_the_origin_comes_from(
    tmp_path: Path, settings: dict[str, object], configured: str, shown: str, from_request: bool
) -> None:
    s = Settings(data_dir=tmp_path, **settings)
    assert shown_origin(s) == (configured, shown)
    assert configured_origin(s)[0] == (None if from_request else configured)
    # A request's Host is used only when the configuration names no origin.
    expected = "http://evil.example:1" if from_request else configured
    assert sso_origin(s, request_to("evil.example:1")) == expected
