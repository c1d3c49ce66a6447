"""``hangar worker --server``: plain http only to a loopback address, where the worker credential and the agents'
tokens cannot cross the network in clear; https to any host."""

from __future__ import annotations

import pytest
import typer

from hangar.cli.worker import _server_url


@pytest.mark.parametrize(
    ("given", "origin"),
    [
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
        ("http://127.8.9.10", "http://127.8.9.10"),
        ("http://localhost:9000/", "http://localhost:9000"),
        ("http://[::1]:9000", "http://[::1]:9000"),
        ("https://hangar.example.com", "https://hangar.example.com"),
        ("https://10.0.0.1:8443", "https://10.0.0.1:8443"),
    ],
)
def test_https_anywhere_and_plain_http_to_this_host_are_taken(given: str, origin: str) -> None:
    assert _server_url(given) == origin


@pytest.mark.parametrize(
    "given", ["http://hangar.example.com", "http://10.0.0.1:8080", "http://localhost.example.com", "http://[::2]"]
)
def test_plain_http_to_another_host_is_refused(given: str) -> None:
    with pytest.raises(typer.BadParameter, match="loopback"):
        _server_url(given)
