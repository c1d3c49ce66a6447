"""Credential and setup files: owner-only, atomic, per provider, removed on disconnect, legacy files migrated."""

from __future__ import annotations

import json
import stat
from datetime import UTC, datetime
from pathlib import Path

import pytest

from hangar.chat.credentials import CredentialFiles
from hangar.core.datadir import DataDir
from hangar.errors import InvalidArgs, NotFound
from hangar.identity import Workspace

WS = Workspace("ws-1", "Acme", datetime(2026, 1, 1, tzinfo=UTC), "u-1")
CREDS = {"botToken": "xoxb-1", "appToken": "xapp-1"}


@pytest.fixture(autouse=True)
def _workspace_dir(tmp_path: Path) -> None:
    """The workspace's directory, as its creation makes it (credentials never make it themselves)."""
    (tmp_path / "ws-1").mkdir()


def test_credentials_of_a_deleted_workspace_make_no_directory(tmp_path: Path) -> None:
    files = CredentialFiles(DataDir(tmp_path))
    gone = Workspace("ws-2", "Gone", datetime(2026, 1, 1, tzinfo=UTC), "u-1")
    with pytest.raises(NotFound):
        files.write(gone, "chatprovider", CREDS)
    assert not (tmp_path / "ws-2").exists()


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_credentials_are_written_owner_only_in_an_owner_only_directory(tmp_path: Path) -> None:
    files = CredentialFiles(DataDir(tmp_path))
    files.write(WS, "chatprovider", CREDS)
    path = tmp_path / "ws-1" / "chat_credentials" / "chatprovider.json"
    assert json.loads(path.read_text()) == CREDS
    assert _mode(path) == 0o600 and _mode(path.parent) == 0o700
    assert files.read(WS, "chatprovider") == CREDS
    files.write_setup(WS, "chatprovider", {"appId": "A1"})
    assert _mode(path.with_name("chatprovider_setup.json")) == 0o600
    assert files.read_setup(WS, "chatprovider") == {"appId": "A1"}


def test_a_rewrite_replaces_the_file_whole_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    files = CredentialFiles(DataDir(tmp_path))
    files.write(WS, "chatprovider", CREDS)
    before = (tmp_path / "ws-1" / "chat_credentials" / "chatprovider.json").stat().st_ino
    files.write(WS, "chatprovider", {**CREDS, "configRefreshToken": "xoxe-1"})
    path = tmp_path / "ws-1" / "chat_credentials" / "chatprovider.json"
    assert path.stat().st_ino != before  # renamed into place, not rewritten in place
    assert sorted(p.name for p in path.parent.iterdir()) == ["chatprovider.json"]
    assert files.read(WS, "chatprovider") == {**CREDS, "configRefreshToken": "xoxe-1"}


def test_delete_removes_credentials_and_setup(tmp_path: Path) -> None:
    files = CredentialFiles(DataDir(tmp_path))
    files.write(WS, "chatprovider", CREDS)
    files.write_setup(WS, "chatprovider", {"appId": "A1"})
    files.delete(WS, "chatprovider")
    assert files.read(WS, "chatprovider") is None and files.read_setup(WS, "chatprovider") is None
    files.delete(WS, "chatprovider")  # twice is fine


def test_an_undeclared_provider_or_a_bad_workspace_id_names_no_file(tmp_path: Path) -> None:
    files = CredentialFiles(DataDir(tmp_path))
    with pytest.raises(InvalidArgs):
        files.write(WS, "../escape", CREDS)
    with pytest.raises(InvalidArgs):
        files.read(Workspace("../x", "x", WS.created_at, "u"), "chatprovider")
    assert list((tmp_path / "ws-1").iterdir()) == []


def test_flat_legacy_files_are_migrated_once_and_removed(tmp_path: Path) -> None:
    base = tmp_path / "ws-1"
    base.mkdir(exist_ok=True)
    (base / "chat_credentials.json").write_text(json.dumps(CREDS))
    (base / "chat_setup.json").write_text(json.dumps({"appId": "A1"}))
    files = CredentialFiles(DataDir(tmp_path))
    assert files.migrate_legacy(WS) == ["chat_credentials.json", "chat_setup.json"]
    assert files.read(WS, "chatprovider") == CREDS and files.read_setup(WS, "chatprovider") == {"appId": "A1"}
    assert not (base / "chat_credentials.json").exists() and not (base / "chat_setup.json").exists()
    assert _mode(base / "chat_credentials" / "chatprovider.json") == 0o600
    assert files.migrate_legacy(WS) == []


def test_legacy_files_keyed_by_provider_migrate_and_a_newer_file_wins(tmp_path: Path) -> None:
    files = CredentialFiles(DataDir(tmp_path))
    files.write(WS, "chatprovider", {"botToken": "xoxb-new", "appToken": "xapp-new"})
    (tmp_path / "ws-1" / "chat_credentials.json").write_text(json.dumps({"chatprovider": CREDS}))
    (tmp_path / "ws-1" / "chat_setup.json").write_text(json.dumps({"chatprovider": {"appId": "A9"}}))
    files.migrate_legacy(WS)
    assert files.read(WS, "chatprovider") == {"botToken": "xoxb-new", "appToken": "xapp-new"}
    assert files.read_setup(WS, "chatprovider") == {"appId": "A9"}
    assert not (tmp_path / "ws-1" / "chat_credentials.json").exists()


def test_an_unreadable_legacy_file_is_left_in_place(tmp_path: Path) -> None:
    (tmp_path / "ws-1").mkdir(exist_ok=True)
    (tmp_path / "ws-1" / "chat_credentials.json").write_text("{not json")
    files = CredentialFiles(DataDir(tmp_path))
    assert files.migrate_legacy(WS) == []
    assert (tmp_path / "ws-1" / "chat_credentials.json").exists() and files.read(WS, "chatprovider") is None
