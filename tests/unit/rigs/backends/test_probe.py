from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from hangar.errors import Unavailable
from hangar.rigs.backends.base import RigSpec
from hangar.rigs.backends.enclosure import EnclosureBackend, probe
from hangar.rigs.backends.enclosure.cgroups import detect


def test_missing_tools_are_named_with_their_package(tmp_path: Path) -> None:
    reason = probe.unavailable_reason(path=str(tmp_path), euid=0)
    assert reason is not None
    assert "bwrap (Debian package bubblewrap)" in reason and "nft (Debian package nftables)" in reason


def test_non_root_is_refused() -> None:
    reason = probe.unavailable_reason(euid=1000)
    assert reason == (
        "the enclosure backend must run as root to create network namespaces and cgroups (the server runs as uid 1000)"
    )


def test_missing_overlayfs_and_namespaces_are_named(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    (proc / "self" / "ns").mkdir(parents=True)
    for ns in ("mnt", "pid", "ipc", "uts"):
        (proc / "self" / "ns" / ns).touch()
    path = ":".join(str(Path(shutil.which(t) or "/x").parent) for t in probe.HOST_TOOLS)
    if any(shutil.which(t) is None for t in probe.HOST_TOOLS):
        pytest.skip("host tools missing")
    assert probe.unavailable_reason(path=path, proc_root=proc, euid=0) == (
        "the kernel lacks namespaces the enclosure needs: net"
    )
    (proc / "self" / "ns" / "net").touch()
    (proc / "filesystems").write_text("nodev\tproc\n\text4\n")
    assert probe.unavailable_reason(path=path, proc_root=proc, euid=0) == (
        "the kernel lacks overlayfs, which rig root filesystems are built on"
    )
    (proc / "filesystems").write_text("nodev\toverlay\n")
    empty_cgroups = tmp_path / "cgroup"
    empty_cgroups.mkdir()
    reason = probe.unavailable_reason(path=path, proc_root=proc, cgroup_root=empty_cgroups, euid=0)
    assert reason == (
        "no usable cgroups for rig limits: no cgroup v2 root and no cgroup v1 hierarchy for memory, cpu, freezer, pids"
    )


async def test_start_refuses_with_the_reason(tmp_path: Path) -> None:
    backend = EnclosureBackend(tmp_path / "rigs", tool_path=str(tmp_path))
    reason = backend.unavailable_reason()
    assert reason is not None
    spec = RigSpec("r1", "ws", "terminal", 512, 2, frozenset(), None, None)
    with pytest.raises(Unavailable) as err:
        await backend.start(spec, lambda _t: None)
    assert err.value.message == reason


def test_this_host_cgroups_are_detected() -> None:
    version, reason = detect()
    assert (version, reason) in {("v1", None), ("v2", None)} or (version is None and reason)


def test_missing_libseccomp_is_named_with_its_package(monkeypatch: pytest.MonkeyPatch) -> None:
    if any(shutil.which(t) is None for t in probe.HOST_TOOLS):
        pytest.skip("host tools missing")
    monkeypatch.setattr(probe.ctypes.util, "find_library", lambda name: None)
    assert probe.unavailable_reason(euid=0) == (
        "the enclosure backend is missing host libraries: libseccomp (Debian package libseccomp2)"
    )
    assert "libseccomp2" in probe.missing_packages()
