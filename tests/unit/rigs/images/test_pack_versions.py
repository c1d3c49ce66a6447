"""Pack versions (``images.versions``): a new version takes the pack's name in one step, a version a rig holds
survives a sweep and goes once released, and a pack from before versions is exchanged, never left missing."""

from __future__ import annotations

import fcntl
import os
import threading
from pathlib import Path

import pytest

from hangar.errors import Unavailable
from hangar.rigs.images import versions

NAME = "terminal-x"


def built(packs: Path, content: str) -> Path:
    tmp = packs / f".tmp-{NAME}-{content}"
    tmp.mkdir(parents=True)
    (tmp / "which").write_text(content)
    return tmp


def test_a_new_version_replaces_the_name_and_the_old_one_goes_once_nobody_holds_it(tmp_path: Path) -> None:
    first = versions.install(built(tmp_path, "one"), tmp_path, NAME)
    assert (tmp_path / NAME / "which").read_text() == "one" and (tmp_path / NAME).is_symlink()
    assert not os.path.isabs(os.readlink(tmp_path / NAME))  # the packs directory may move
    held = versions.hold(tmp_path, NAME)
    assert held.path == first
    second = versions.install(built(tmp_path, "two"), tmp_path, NAME)
    assert (tmp_path / NAME / "which").read_text() == "two"
    assert versions.sweep(tmp_path, NAME) == []  # a rig still boots from the first
    assert (first / "which").read_text() == "one" and versions.held_versions(tmp_path, NAME) == 1
    held.release()
    assert versions.sweep(tmp_path, NAME) == [first.name]
    assert not first.exists() and second.is_dir() and versions.held_versions(tmp_path, NAME) == 0
    assert versions.sweep(tmp_path, NAME) == []  # the current one is never removed


def test_a_pack_from_before_versions_is_exchanged_in_one_step_and_kept_while_held(tmp_path: Path) -> None:
    legacy = tmp_path / NAME
    legacy.mkdir()
    (legacy / "which").write_text("legacy")
    held = versions.hold(tmp_path, NAME)
    assert held.path == legacy
    versions.install(built(tmp_path, "new"), tmp_path, NAME)
    assert (tmp_path / NAME).is_symlink() and (tmp_path / NAME / "which").read_text() == "new"
    (old,) = [p for p in versions.versions_dir(tmp_path, NAME).iterdir() if p.name.startswith("before-versions-")]
    assert (old / "which").read_text() == "legacy"
    assert versions.sweep(tmp_path, NAME) == []
    held.release()
    assert versions.sweep(tmp_path, NAME) == [old.name] and not old.exists()


def test_holding_a_pack_that_is_not_built_says_so(tmp_path: Path) -> None:
    with pytest.raises(Unavailable, match=f"the pack {NAME} is not built"):
        versions.hold(tmp_path, NAME)


def test_a_holder_never_gets_a_version_being_removed(tmp_path: Path) -> None:
    """A sweep holding a version's lock (removing it) makes a holder that chose that version wait, then choose
    the current one instead."""
    first = versions.install(built(tmp_path, "one"), tmp_path, NAME)
    fd = os.open(first, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(fd, fcntl.LOCK_EX)  # as a sweep does while it removes the version
    got: list[Path] = []
    holder = threading.Thread(target=lambda: got.append(versions.hold(tmp_path, NAME).path))
    holder.start()
    holder.join(0.2)
    assert holder.is_alive()  # waiting on the lock
    second = versions.install(built(tmp_path, "two"), tmp_path, NAME)
    os.close(fd)
    holder.join(10)
    assert got == [second]
