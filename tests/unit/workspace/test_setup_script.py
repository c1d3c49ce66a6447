"""Which files count as a repository's setup script: an executable regular file at .hangar/setup in the worktree,
found beneath the space's folder without following any symlink a repository (or the space's guests) may plant."""

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
    (tmp_path / "app").mkdir()
    assert not has_setup_script(tmp_path, "app")
    _script(tmp_path / "app")
    assert has_setup_script(tmp_path, "app")
    assert not has_setup_script(tmp_path / "missing", "app")


def test_a_file_without_the_executable_bit_does_not(tmp_path: Path) -> None:
    _script(tmp_path / "app", 0o644)
    assert not has_setup_script(tmp_path, "app")


def test_symlinks_are_never_followed(tmp_path: Path) -> None:
    elsewhere = _script(tmp_path / "host")
    space = tmp_path / "space"
    (space / "a" / ".hangar").mkdir(parents=True)
    (space / "a" / ".hangar" / "setup").symlink_to(elsewhere)
    assert not has_setup_script(space, "a")
    (space / "b").mkdir()
    (space / "b" / ".hangar").symlink_to(elsewhere.parent)
    assert not has_setup_script(space, "b")
    (space / "c").symlink_to(tmp_path / "host")  # the worktree itself swapped for a link
    assert not has_setup_script(space, "c")


def test_a_directory_at_the_path_does_not_count(tmp_path: Path) -> None:
    (tmp_path / "app" / ".hangar" / "setup").mkdir(parents=True)
    assert not has_setup_script(tmp_path, "app")
