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


def test_trusted_proxies_and_origins_from_flags_or_comma_separated_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HANGAR_TRUSTED_PROXIES", "10.0.0.7, 192.168.0.0/16,fd00::1/64")
    monkeypatch.setenv("HANGAR_TRUSTED_ORIGINS", "http://localhost:5173/")
    s = Settings()
    assert s.trusted_proxies == ("10.0.0.7/32", "192.168.0.0/16", "fd00::/64")
    assert s.trusted_origins == ("http://localhost:5173",)
    assert Settings.from_flags(trusted_proxies=["127.0.0.1"]).trusted_proxies == ("127.0.0.1/32",)
    monkeypatch.delenv("HANGAR_TRUSTED_PROXIES")
    assert Settings().trusted_proxies == ()  # by default no proxy header is honoured from anyone
    with pytest.raises(ValueError, match=r"--trusted-proxy: 'proxy\.example' is not an IP address"):
        Settings.from_flags(trusted_proxies=["proxy.example"])
    with pytest.raises(ValueError, match="--trusted-origin"):
        Settings.from_flags(trusted_origins=["localhost:5173"])


def test_limits_have_their_defaults_and_refuse_nonsense(monkeypatch: pytest.MonkeyPatch) -> None:
    s = Settings()
    assert (s.max_connections, s.max_connections_per_address, s.request_head_timeout) == (None, 256, 10.0)
    assert (s.mcp_sessions_per_credential, s.mcp_sessions_per_user, s.mcp_sessions_per_workspace) == (64, 256, 1000)
    monkeypatch.setenv("HANGAR_MCP_SESSIONS_PER_USER", "20")
    assert Settings().mcp_sessions_per_user == 20
    for field, value in (("max_connections_per_address", 0), ("request_head_timeout", 0), ("max_connections", 0)):
        with pytest.raises(ValueError, match=field):
            Settings.from_flags(**{field: value})


def test_the_chat_claim_lease_is_15_s_and_kept_between_1_and_600(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings().chat_claim_ttl_seconds == 15.0
    for accepted in ("1", "600"):
        monkeypatch.setenv("HANGAR_CHAT_CLAIM_TTL_SECONDS", accepted)
        assert Settings().chat_claim_ttl_seconds == float(accepted)
    for refused in ("0.99", "600.01"):
        monkeypatch.setenv("HANGAR_CHAT_CLAIM_TTL_SECONDS", refused)
        with pytest.raises(ValueError, match="chat_claim_ttl_seconds"):
            Settings()
