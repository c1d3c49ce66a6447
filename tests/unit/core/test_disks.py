"""Scope disks on this host: made, mounted, bounded, removed; a directory of hostile links removed without
following one; a directory that already holds files left as it is."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from hangar.core.disks import (
    DEFAULT_RUN_DISK_MB,
    MIN_DISK_MB,
    RUN_DISK_SETTING,
    SPACE_DISK_SETTING,
    ScopeDisks,
    disk_name,
    full_note,
    host_reason,
    quota_of,
    remove_tree,
)


def test_names_and_quotas_follow_the_scope_kind() -> None:
    assert disk_name("pipelineRun:ab-1") == "pipelineRun-ab-1"
    assert disk_name("space:w/../x:s") == "space-w----x-s"
    assert quota_of("pipelineRun:x") == (RUN_DISK_SETTING, DEFAULT_RUN_DISK_MB)
    assert quota_of("space:w:s")[0] == SPACE_DISK_SETTING


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
    remove_tree(tree)
    assert not tree.exists()
    assert (outside / "file").read_text() == (outside / "dir" / "inner").read_text() == "keep"
    link = tmp_path / "link"
    link.symlink_to(outside)
    remove_tree(link)  # a link given as the tree is removed itself, never followed
    assert not link.exists() and (outside / "dir" / "inner").exists()


needs_disks = pytest.mark.skipif(host_reason() is not None, reason=f"no disks here: {host_reason()}")


@needs_disks
async def test_a_disk_bounds_its_directory_and_goes_with_it(tmp_path: Path) -> None:
    async def small(_key: str) -> int:
        return MIN_DISK_MB

    disks = ScopeDisks(tmp_path / "disks", small)
    target = tmp_path / "run"
    try:
        assert await disks.ensure("pipelineRun:r1", target)
        assert os.path.ismount(target) and not (target / "lost+found").exists()
        assert await disks.ensure("pipelineRun:r1", target)  # mounted already: nothing more to do
        with pytest.raises(OSError) as full, open(target / "big", "wb") as f:
            for _ in range(MIN_DISK_MB + 1):
                f.write(b"\0" * 1024 * 1024)
        assert full.value.errno == 28  # ENOSPC
        note = full_note(target, "pipelineRun:r1") or ""
        assert note.startswith("its disk is full: the quota is ") and note.endswith(f" MB ({RUN_DISK_SETTING})")
        assert full_note(tmp_path, "pipelineRun:r1") is None  # not a disk
    finally:
        await disks.remove("pipelineRun:r1", target)
    assert not target.exists() and not list((tmp_path / "disks").iterdir())


@needs_disks
async def test_a_directory_already_holding_files_keeps_them_and_stays_unbounded(tmp_path: Path) -> None:
    disks = ScopeDisks(tmp_path / "disks")
    target = tmp_path / "legacy"
    target.mkdir()
    (target / "old.txt").write_text("old")
    assert not await disks.ensure("space:w:s", target)
    assert not os.path.ismount(target) and (target / "old.txt").read_text() == "old"
    await disks.remove("space:w:s", target)
    assert not target.exists()


@needs_disks
async def test_disks_are_mounted_again_after_a_reboot(tmp_path: Path) -> None:
    disks = ScopeDisks(tmp_path / "disks")
    target = tmp_path / "run"
    try:
        assert await disks.ensure("pipelineRun:r2", target)
        (target / "kept.txt").write_text("kept")
        subprocess.run(["umount", str(target)], check=True)  # what a reboot does
        assert not os.path.ismount(target) and not (target / "kept.txt").exists()
        assert await disks.remount() == 1
        assert (target / "kept.txt").read_text() == "kept"
    finally:
        await disks.remove("pipelineRun:r2", target)
