"""The Web API base comes from ``HANGAR_CHATPROVIDER_API_URL``, Slack's public one by default."""

from __future__ import annotations

import pytest

from hangar.config import Settings


def test_default_and_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HANGAR_CHATPROVIDER_API_URL", raising=False)
    assert Settings().chatprovider_api_url == "https://slack.com/api/"
    monkeypatch.setenv("HANGAR_CHATPROVIDER_API_URL", "http://127.0.0.1:5000/api/")
    assert Settings().chatprovider_api_url == "http://127.0.0.1:5000/api/"
    assert Settings(chatprovider_api_url="http://x/api/").chatprovider_api_url == "http://x/api/"
