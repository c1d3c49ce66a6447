"""Confined resolution against a real directory standing in for a rig root."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from hangar.errors import Conflict, InvalidArgs, NotFound, Refused
from hangar.rigs.backends.enclosure import fs


@pytest.fixture
def root(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    top = tmp_path / "root"
    (top / "home" / "rig").mkdir(parents=True)
    (tmp_path / "outside.txt").write_text("host secret")
    fd = os.open(top, os.O_PATH | os.O_DIRECTORY)
    yield fd, top
    os.close(fd)


def read(fd: int) -> bytes:
    try:
        return os.read(fd, 1 << 20)
    finally:
        os.close(fd)


def test_write_creates_parents_and_read_back(root: tuple[int, Path]) -> None:
    fd, top = root
    owner = (os.getuid(), os.getgid())
    wfd = fs.open_for_write(fd, "/home/rig/drops/deep/a.txt", exclusive=True, owner=owner)
    os.write(wfd, b"data")
    os.close(wfd)
    assert (top / "home/rig/drops/deep/a.txt").read_bytes() == b"data"
    assert read(fs.open_for_read(fd, "/home/rig/./drops//deep/a.txt")) == b"data"
    with pytest.raises(Conflict):
        fs.open_for_write(fd, "/home/rig/drops/deep/a.txt", exclusive=True, owner=owner)


def test_dotdot_and_relative_paths_are_refused(root: tuple[int, Path]) -> None:
    fd, _ = root
    with pytest.raises(Refused):
        fs.open_for_read(fd, "/home/../../outside.txt")
    with pytest.raises(InvalidArgs):
        fs.open_for_read(fd, "home/rig/x")
    with pytest.raises(InvalidArgs):
        fs.open_for_read(fd, "/")


def test_symlinks_are_never_followed(root: tuple[int, Path], tmp_path: Path) -> None:
    fd, top = root
    owner = (os.getuid(), os.getgid())
    os.symlink(tmp_path / "outside.txt", top / "home/rig/link.txt")
    os.symlink(tmp_path, top / "home/rig/dirlink")
    os.symlink("/home/rig", top / "home/rig/inside")  # even one pointing inside the rig
    for path in ("/home/rig/link.txt", "/home/rig/dirlink/outside.txt", "/home/rig/inside/x"):
        with pytest.raises(Refused):
            fs.open_for_read(fd, path)
        with pytest.raises(Refused):
            fs.open_for_write(fd, path, exclusive=False, owner=owner)
    assert (tmp_path / "outside.txt").read_text() == "host secret"


def test_missing_and_non_regular_files(root: tuple[int, Path]) -> None:
    fd, top = root
    with pytest.raises(NotFound):
        fs.open_for_read(fd, "/home/rig/none.txt")
    with pytest.raises(NotFound):
        fs.open_for_read(fd, "/nope/none.txt")
    os.mkfifo(top / "home/rig/fifo")
    with pytest.raises(Refused):
        fs.open_for_read(fd, "/home/rig/fifo")
    with pytest.raises(Refused):
        fs.open_for_read(fd, "/home/rig")
