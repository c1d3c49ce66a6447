"""Scope disks on this host: made, mounted, bounded, removed; a directory of hostile links removed without
following one; a directory that already holds files left as it is."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from hangar.core.beneath import remove_path
from hangar.core.disks import (
    DEFAULT_RUN_DISK_MB,
    MIN_DISK_MB,
    RUN_DISK_SETTING,
    SPACE_DISK_SETTING,
    ScopeDisks,
    disk_of,
    full_note,
    host_reason,
)


def test_a_disk_is_named_by_the_directory_it_bounds(tmp_path: Path) -> None:
    assert disk_of(tmp_path, tmp_path / "pipelines" / "r1") == ("run-r1", RUN_DISK_SETTING, DEFAULT_RUN_DISK_MB)
    assert disk_of(tmp_path, tmp_path / "w1" / "spaces" / "s.1") == ("space-w1-s-1", SPACE_DISK_SETTING, 8192)
    for other in (tmp_path / "pipelines" / ".control", tmp_path / "w1" / "worktrees" / "x", tmp_path.parent / "x"):
        assert disk_of(tmp_path, other) is None


def test_a_tree_full_of_links_out_is_removed_without_following_one(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    (outside / "dir").mkdir(parents=True)
    (outside / "file").write_text("keep")
    (outside / "dir" / "inner").write_text("keep")
    tree = tmp_path / "tree"
    (tree / "a" / "b").mkdir(parents=True)
    (tree / "a" / "to-file").symlink_to(outside / "file")
    (tree / "a" / "b" / "to-dir").symlink_to(outside / "dir")
    (tree / "to-root").symlink_to("/")
    remove_path(tree)
    assert not tree.exists()
    assert (outside / "file").read_text() == (outside / "dir" / "inner").read_text() == "keep"
    link = tmp_path / "link"
    link.symlink_to(outside)
    remove_path(link)  # a link given as the tree is removed itself, never followed
    assert not link.exists() and (outside / "dir" / "inner").exists()


needs_disks = pytest.mark.skipif(host_reason() is not None, reason=f"no disks here: {host_reason()}")


@needs_disks
async def test_a_disk_bounds_its_directory_and_goes_with_it(tmp_path: Path) -> None:
    async def small(_setting: str) -> int:
        return MIN_DISK_MB

    disks = ScopeDisks(tmp_path / "disks", small)
    target = tmp_path / "pipelines" / "r1"
    try:
        assert await disks.ensure(target)
        assert os.path.ismount(target) and not (target / "lost+found").exists()
        assert await disks.ensure(target)  # mounted already: nothing more to do
        with pytest.raises(OSError) as full, open(target / "big", "wb") as f:
            for _ in range(MIN_DISK_MB + 1):
                f.write(b"\0" * 1024 * 1024)
        assert full.value.errno == 28  # ENOSPC
        note = full_note(target, RUN_DISK_SETTING) or ""
        assert note.startswith("its disk is full (") and note.endswith(
            f"the quota is the server setting {RUN_DISK_SETTING})"
        )
        assert full_note(tmp_path, RUN_DISK_SETTING) is None  # not a disk
    finally:
        await disks.remove(target)
    # What stays is the empty disk new ones are copied from.
    assert not target.exists() and [p.name for p in (tmp_path / "disks").iterdir()] == ["templates"]


@needs_disks
async def test_a_directory_already_holding_files_keeps_them_and_stays_unbounded(tmp_path: Path) -> None:
    disks = ScopeDisks(tmp_path / "disks")
    target = tmp_path / "w1" / "spaces" / "s1"
    target.mkdir(parents=True)
    (target / "old.txt").write_text("old")
    assert not await disks.ensure(target)
    assert not os.path.ismount(target) and (target / "old.txt").read_text() == "old"
    await disks.remove(target)
    assert not target.exists()


@needs_disks
async def test_disks_are_mounted_again_after_a_reboot(tmp_path: Path) -> None:
    disks = ScopeDisks(tmp_path / "disks")
    target = tmp_path / "pipelines" / "r2"
    try:
        assert await disks.ensure(target)
        (target / "kept.txt").write_text("kept")
        subprocess.run(["umount", str(target)], check=True)  # what a reboot does
        assert not os.path.ismount(target) and not (target / "kept.txt").exists()
        assert await disks.remount() == 1
        assert (target / "kept.txt").read_text() == "kept"
    finally:
        await disks.remove(target)
