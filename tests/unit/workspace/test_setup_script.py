"""Which files count as a repository's setup script: an executable regular file at .hangar/setup, found without
following any symlink a repository may carry."""

from __future__ import annotations

from pathlib import Path

from hangar.workspace.setup_script import has_setup_script


def _script(worktree: Path, mode: int = 0o755) -> Path:
    path = worktree / ".hangar" / "setup"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\ntrue\n")
    path.chmod(mode)
    return path


def test_an_executable_regular_file_counts(tmp_path: Path) -> None:
    assert not has_setup_script(tmp_path)
    _script(tmp_path)
    assert has_setup_script(tmp_path)


def test_a_file_without_the_executable_bit_does_not(tmp_path: Path) -> None:
    _script(tmp_path, 0o644)
    assert not has_setup_script(tmp_path)


def test_symlinks_are_never_followed(tmp_path: Path) -> None:
    elsewhere = _script(tmp_path / "host")
    linked_file = tmp_path / "a"
    (linked_file / ".hangar").mkdir(parents=True)
    (linked_file / ".hangar" / "setup").symlink_to(elsewhere)
    assert not has_setup_script(linked_file)
    linked_dir = tmp_path / "b"
    linked_dir.mkdir()
    (linked_dir / ".hangar").symlink_to(elsewhere.parent)
    assert not has_setup_script(linked_dir)


def test_a_directory_at_the_path_does_not_count(tmp_path: Path) -> None:
    (tmp_path / ".hangar" / "setup").mkdir(parents=True)
    assert not has_setup_script(tmp_path)
