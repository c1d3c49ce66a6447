from __future__ import annotations

from pathlib import Path

import pytest

from hangar.config import Settings


def test_flags_win_over_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SERVER_WEB_CLIENT_URL", "https://app.example.test/")
    monkeypatch.setenv("HANGAR_PUBLIC_URL", "https://hangar.example.test")
    monkeypatch.setenv("HANGAR_DATA_DIR", str(tmp_path / "env"))
    s = Settings.from_flags(web_client_url=None, public_url=None, data_dir=None)
    assert s.web_client_url == "https://app.example.test"
    assert s.public_url == "https://hangar.example.test"
    assert s.data_dir == tmp_path / "env"
    s = Settings.from_flags(web_client_url="http://localhost:3000", data_dir=tmp_path / "flag")
    assert s.web_client_url == "http://localhost:3000" and s.data_dir == tmp_path / "flag"


def test_default_data_dir_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("HANGAR_DATA_DIR", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert Settings().data_dir == tmp_path / "hangar"


def test_bad_origin_is_named() -> None:
    with pytest.raises(ValueError, match="--web-client-url"):
        Settings.from_flags(web_client_url="ftp://x")
