"""``hangar.core.beneath``: opening, walking and removing inside a tree a guest can write, with the kernel's openat2
and with the component walk used where openat2 is missing; the ACL grant built on it; ``contained``."""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from hangar.core import beneath
from hangar.core.beneath import (
    MAX_DEPTH,
    NotBeneath,
    anchored,
    copy_new,
    list_beneath,
    lstat_beneath,
    open_beneath,
    read_regular,
    remove_entry,
    remove_path,
    rename_noreplace,
    walk,
)
from hangar.core.guestacl import (
    ACCESS,
    DEFAULT,
    FORMER_RIG_GID,
    FORMER_RIG_UID,
    RIG_GID,
    RIG_UID,
    acl_bytes,
    grant_tree,
    granted_users,
    grants_guest,
)
from hangar.core.paths import contained
from hangar.errors import InvalidArgs


@pytest.fixture(params=["openat2", "component walk"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    if request.param == "openat2" and beneath.SYS_OPENAT2 is None:
        pytest.skip("no openat2 number for this architecture")
    monkeypatch.setattr(beneath, "_openat2_missing", request.param != "openat2")
    yield request.param


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """``space/`` with a file, a folder, and links out of it (absolute, relative, to a folder and to a file)."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("host secret\n")
    space = tmp_path / "space"
    (space / "src").mkdir(parents=True)
    (space / "src" / "a.txt").write_text("hello\n")
    (space / "to-dir").symlink_to(outside)
    (space / "to-file").symlink_to(outside / "secret.txt")
    (space / "src" / "up").symlink_to("../../outside")
    (space / "inner").symlink_to("src")  # stays inside, still a link: refused all the same
    os.mkfifo(space / "fifo")
    return space


def test_paths_beneath_are_opened_and_links_or_ways_out_are_refused(tree: Path, mode: str) -> None:
    with anchored(tree) as root:
        assert read_regular(root, "src/a.txt", 100) == b"hello\n"
        assert read_regular(root, "src/./../src/a.txt", 3) == b"hel"  # lexical, and at most the limit
        for rel in ("to-dir/secret.txt", "to-file", "src/up/secret.txt", "inner/a.txt", "../outside/secret.txt",
                    "/etc/passwd", "src/../../outside/secret.txt", "a\0b"):  # fmt: skip
            with pytest.raises(NotBeneath):
                read_regular(root, rel, 100)
        with pytest.raises(OSError) as err:
            read_regular(root, "fifo", 100)  # never blocks on a fifo
        assert err.value.errno == errno.EINVAL
        with pytest.raises(IsADirectoryError):
            read_regular(root, "src", 100)
        with pytest.raises(FileNotFoundError):
            read_regular(root, "src/missing", 100)
        assert list_beneath(root, "") == [
            ("fifo", False), ("inner", False), ("src", True), ("to-dir", False), ("to-file", False)
        ]  # fmt: skip
        assert list_beneath(root, "src") == [("a.txt", False), ("up", False)]
        with pytest.raises(NotBeneath):
            list_beneath(root, "to-dir")
        assert lstat_beneath(root, "to-dir") is not None  # the link itself is there
        assert lstat_beneath(root, "to-dir/secret.txt") is None  # what it points at is not looked at
        fd = open_beneath(root, "src", os.O_PATH | os.O_DIRECTORY)
        os.close(fd)
        with pytest.raises(NotBeneath):
            open_beneath(root, "to-dir", os.O_PATH)


def test_walk_follows_nothing_and_stops_at_its_depth(tree: Path, mode: str) -> None:
    deep = tree / "deep"
    for _ in range(5):
        deep = deep / "d"
    deep.mkdir(parents=True)
    with anchored(tree) as root:
        seen = {"/".join(parts) for _fd, _name, _st, parts in walk(root)}
        assert "src/up" in seen and "to-dir" in seen
        assert not any(p.startswith(("to-dir/", "src/up/", "inner/")) for p in seen)
        assert "deep/d/d/d/d/d" in seen
        # max_depth levels are entered: a folder at that depth is reported, what it holds is not
        capped = {"/".join(p) for *_, p in walk(root, max_depth=5)}
        assert "deep/d/d/d/d" in capped and "deep/d/d/d/d/d" not in capped
        assert "deep/d/d/d/d/d" in {"/".join(p) for *_, p in walk(root, max_depth=6)}
        pruned = {"/".join(p) for *_, p in walk(root, prune={"src"})}
        assert "src" in pruned and "src/a.txt" not in pruned


def test_removal_follows_no_link_and_goes_any_depth(tree: Path, mode: str) -> None:
    deep = tree / "deep"
    for _ in range(MAX_DEPTH * 2 + 3):  # deeper than one descriptor per level would allow
        deep = deep / "d"
    deep.mkdir(parents=True)
    (deep / "f").write_text("x")
    with anchored(tree) as root:
        assert remove_entry(root, "to-dir")  # the link goes, not what it points at
        assert remove_entry(root, "deep")
        assert not remove_entry(root, "deep")
    assert (tree.parent / "outside" / "secret.txt").read_text() == "host secret\n"
    assert not (tree / "deep").exists() and not (tree / "to-dir").is_symlink()
    (tree / "src" / "link-out").symlink_to(tree.parent / "outside")
    assert remove_path(tree)
    assert not tree.exists() and (tree.parent / "outside" / "secret.txt").exists()
    assert not remove_path(tree) and not remove_path(tree / "gone" / "x")


def test_rename_never_replaces_anything(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "src").mkdir()
    (tmp_path / "b" / "taken").symlink_to("/nowhere")  # a dangling link is something too
    with anchored(tmp_path / "a") as a, anchored(tmp_path / "b") as b:
        os.mkdir("moving", dir_fd=a)
        with pytest.raises(FileExistsError):
            rename_noreplace(a, "moving", b, "taken")
        rename_noreplace(a, "moving", b, "moved")
        with pytest.raises(NotBeneath):
            rename_noreplace(a, "../src", b, "x")
    assert (tmp_path / "b" / "moved").is_dir()


def test_a_copy_across_is_made_new_and_follows_nothing(tmp_path: Path) -> None:
    """What a move between file systems falls back to: a new folder (never over anything, a planted link
    included), closed to everyone but its owner until the copy is whole, with files, modes and links kept."""
    src, dst, host = tmp_path / "staging", tmp_path / "space", tmp_path / "host"
    (src / "app" / "src" / "deep").mkdir(parents=True)
    (src / "app" / "src" / "deep" / "main.py").write_text("print(1)\n" * 10_000)
    (src / "app" / "run.sh").write_text("#!/bin/sh\n")
    os.chmod(src / "app" / "run.sh", 0o755)
    (src / "app" / "link").symlink_to("src/deep/main.py")
    dst.mkdir()
    host.mkdir()
    (dst / "taken").symlink_to(host)
    with anchored(src) as s, anchored(dst) as d:
        with pytest.raises(FileExistsError):
            copy_new(s, "app", d, "taken")
        copy_new(s, "app", d, "app")
        with pytest.raises(NotBeneath):
            copy_new(s, "app", d, "../elsewhere")
    assert list(host.iterdir()) == []
    copied = dst / "app"
    assert (copied / "src" / "deep" / "main.py").read_text() == "print(1)\n" * 10_000
    assert os.stat(copied / "run.sh").st_mode & 0o777 == 0o755
    assert os.readlink(copied / "link") == "src/deep/main.py"
    assert os.stat(copied).st_mode & 0o777 == os.stat(src / "app").st_mode & 0o777


def test_grants_stay_inside_the_tree(tree: Path, mode: str) -> None:
    outside = tree.parent / "outside"
    with anchored(tree) as root:
        changed = grant_tree(root)
        assert granted_users(root) == granted_users(root, DEFAULT) == [RIG_UID] and grants_guest(root)
    if changed == 0:
        pytest.skip("this file system takes no ACLs")
    assert changed == 3  # the space, src and src/a.txt: no link, no fifo
    for path in (outside, outside / "secret.txt"):
        with pytest.raises(OSError) as err:
            os.getxattr(path, ACCESS)
        assert err.value.errno == errno.ENODATA
    with anchored(outside) as out:
        assert granted_users(out, DEFAULT) == [] and not grants_guest(out)


def test_granting_again_takes_back_what_the_former_rig_uid_had(tmp_path: Path) -> None:
    """A tree granted when the rig user was uid 1000 (a host account's uid on most hosts): ACL entries naming
    1000 and files that uid made. Granting it again leaves that uid nothing and touches no one else's files."""
    if os.geteuid() != 0:
        pytest.skip("changing owners needs root")
    space = tmp_path / "space"
    (space / "made-by-rig").mkdir(parents=True)
    (space / "made-by-rig" / "notes.txt").write_text("mine\n")
    (space / "checkout.txt").write_text("the server's\n")
    (space / "made-by-rig" / "link").symlink_to("notes.txt")
    for path in (space, space / "made-by-rig", space / "made-by-rig" / "notes.txt", space / "checkout.txt"):
        try:
            os.setxattr(path, ACCESS, acl_bytes(path.stat().st_mode, FORMER_RIG_UID, 7))
        except OSError:
            pytest.skip("this file system takes no ACLs")
    for path in (space / "made-by-rig", space / "made-by-rig" / "notes.txt"):
        os.chown(path, FORMER_RIG_UID, FORMER_RIG_GID)
    os.chown(space / "made-by-rig" / "link", FORMER_RIG_UID, FORMER_RIG_GID, follow_symlinks=False)
    with anchored(space) as root:
        assert granted_users(root) == [FORMER_RIG_UID]
        assert grant_tree(root) == 4
    for path in (space / "made-by-rig", space / "made-by-rig" / "notes.txt"):
        st = path.stat()
        assert (st.st_uid, st.st_gid) == (RIG_UID, RIG_GID), path
    assert (space / "checkout.txt").stat().st_uid == 0  # only what the former rig uid owned changes hands
    for path in (space, space / "made-by-rig", space / "made-by-rig" / "notes.txt", space / "checkout.txt"):
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        try:
            assert granted_users(fd) == [RIG_UID], path
        finally:
            os.close(fd)
    assert (space / "made-by-rig" / "link").lstat().st_uid == FORMER_RIG_UID  # a link is never acted on


def test_contained_refuses_links_without_following_them(tmp_path: Path) -> None:
    (tmp_path / "ok").mkdir()
    (tmp_path / "link").symlink_to("/")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    assert contained(tmp_path, "ok", "x", field="f") == tmp_path / "ok" / "x"
    assert contained(tmp_path, "new", field="f") == tmp_path / "new"
    for parts in (("link",), ("link", "etc"), ("dangling",)):
        with pytest.raises(InvalidArgs) as err:
            contained(tmp_path, *parts, field="f")
        assert err.value.field == "f" and "leaves its directory" in err.value.message
    for bad in ("..", "a/b", "", "\0"):
        with pytest.raises(InvalidArgs):
            contained(tmp_path, bad, field="f")
