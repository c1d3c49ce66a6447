from __future__ import annotations

import json
from pathlib import Path

import pytest

from hangar.core.guestacl import RIG_GID, RIG_UID
from hangar.errors import Unavailable
from hangar.rigs.images import builder as pack
from hangar.rigs.images import mirror, recipes


def test_mirror_from_deb822_and_one_line_sources(tmp_path: Path) -> None:
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list").write_text(
        "# comment\ndeb [signed-by=/k.gpg] http://security.example.org/debian-security bookworm-security main\n"
    )
    (tmp_path / "sources.list.d" / "debian.sources").write_text(
        "Types: deb\nURIs: http://mirror.example.net/debian/\nSuites: bookworm bookworm-updates\n"
        "Components: main\n\nTypes: deb-src\nURIs: http://src.example.net/debian\nSuites: bookworm\n"
    )
    assert mirror.debian_mirror("bookworm", tmp_path) == "http://mirror.example.net/debian"
    assert mirror.debian_sources("bookworm", tmp_path) == [
        "deb http://mirror.example.net/debian bookworm main",
        "deb http://mirror.example.net/debian bookworm-updates main",
        "deb http://security.example.org/debian-security bookworm-security main",
    ]
    assert mirror.mirror_hosts(tmp_path) == {"security.example.org", "mirror.example.net"}


def test_no_mirror_is_a_clear_refusal(tmp_path: Path) -> None:
    with pytest.raises(Unavailable) as err:
        mirror.debian_mirror("bookworm", tmp_path)
    assert "no apt source for Debian bookworm" in err.value.message


def test_this_machine_has_a_mirror() -> None:
    assert mirror.debian_mirror().startswith(("http://", "https://"))


def test_progress_steps_from_mmdebstrap_lines() -> None:
    assert pack.step_of("I: downloading packages with apt...") == (3, "downloading packages")
    assert pack.step_of("I: installing remaining packages inside the chroot...") == (6, "installing the packages")
    assert pack.step_of("Get:1 http://x bookworm InRelease") is None


def test_pack_ready_needs_the_marker_of_this_revision(tmp_path: Path) -> None:
    path = pack.pack_path(tmp_path)
    path.mkdir()
    assert not pack.pack_ready(tmp_path)
    (path / pack.MARKER).write_text(json.dumps({"revision": "tools-v0"}))
    assert not pack.pack_ready(tmp_path)
    (path / pack.MARKER).write_text(json.dumps({"revision": pack.TOOLSET_REVISION}))
    assert not pack.pack_ready(tmp_path)  # built before packs took the security suites: rebuilt once
    built = {"revision": pack.TOOLSET_REVISION, "format": pack.MARKER_FORMAT}
    (path / pack.MARKER).write_text(json.dumps(built))
    assert not pack.pack_ready(tmp_path)  # says nothing of its rig user's uid
    (path / pack.MARKER).write_text(json.dumps({**built, "rigUid": 1000, "rigGid": 1000}))
    assert not pack.pack_ready(tmp_path)  # its rig user has a host account's uid: rebuilt once
    (path / pack.MARKER).write_text(json.dumps({**built, "rigUid": RIG_UID, "rigGid": RIG_GID}))
    assert pack.pack_ready(tmp_path)


def test_every_pack_name_carries_the_base_revision() -> None:
    """The rig user's uid is baked into every pack: a pack named before it changed is never booted (a server of
    an older version sharing the packs directory keeps its own), and each is built once under its new name."""
    names = [recipe.name for recipe in recipes.ALL]
    assert names[0] == pack.PACK_NAME == "terminal-tools-v1-base-v2"
    assert all(name.endswith(f"-{pack.BASE_REVISION}") for name in names), names
    assert "useradd --create-home --no-log-init --uid 2100000000 --gid 2100000000" in " ".join(pack._BASE_HOOKS)


def test_a_build_clears_only_its_own_leftovers(tmp_path: Path) -> None:
    """A pack whose name extends another's (a later base revision of it) keeps its build directory when the
    other pack is built."""
    mine = tmp_path / f".tmp-{pack.TERMINAL.name}-123"
    longer = tmp_path / f".tmp-{pack.TERMINAL.name}-base-v3-456"
    for path in (mine, longer):
        path.mkdir()
    assert pack._clear_stale(tmp_path, pack.TERMINAL).parent == tmp_path
    assert not mine.exists() and longer.is_dir()
