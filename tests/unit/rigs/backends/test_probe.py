from __future__ import annotations

import grp
import pwd
import shutil
from pathlib import Path

import pytest

from hangar.core.guestacl import RIG_GID, RIG_UID
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


def test_cgroups_are_detected_with_every_controller_rigs_need(tmp_path: Path) -> None:
    """v2 where the root lists memory, cpu and pids; else v1 where each of its hierarchies is mounted; else the
    reason, naming what is missing."""
    v2 = tmp_path / "v2"
    v2.mkdir()
    (v2 / "cgroup.controllers").write_text("cpuset cpu io memory hugetlb pids rdma\n")
    assert detect(v2) == ("v2", None)
    for lacking in ("memory", "cpu", "pids"):
        have = {"cpuset", "io", "memory", "cpu", "pids"} - {lacking}
        (v2 / "cgroup.controllers").write_text(" ".join(sorted(have)) + "\n")
        assert detect(v2) == (None, f"cgroup v2 lacks the {lacking} controller(s)")
    v1 = tmp_path / "v1"
    for controller in ("memory", "cpu", "freezer", "pids"):
        (v1 / controller).mkdir(parents=True)
        (v1 / controller / "cgroup.procs").touch()
    (v1 / "unified").mkdir()  # a v2 hierarchy mounted beside v1 carries no controllers and is not taken for v2
    assert detect(v1) == ("v1", None)
    (v1 / "freezer" / "cgroup.procs").unlink()
    assert detect(v1) == (None, "no cgroup v2 root and no cgroup v1 hierarchy for freezer")


def test_missing_libseccomp_is_named_with_its_package(monkeypatch: pytest.MonkeyPatch) -> None:
    if any(shutil.which(t) is None for t in probe.HOST_TOOLS):
        pytest.skip("host tools missing")
    monkeypatch.setattr(probe.ctypes.util, "find_library", lambda name: None)
    assert probe.unavailable_reason(euid=0) == (
        "the enclosure backend is missing host libraries: libseccomp (Debian package libseccomp2)"
    )
    assert "libseccomp2" in probe.missing_packages()


def fake_process(
    proc: Path, pid: int, *, uid: int, gid: int, groups: str = "", cgroup: str = "0::/user.slice\n"
) -> None:
    entry = proc / str(pid)
    entry.mkdir(parents=True)
    (entry / "status").write_text(
        f"Name:\tsquatter\nUid:\t{uid}\t{uid}\t{uid}\t{uid}\nGid:\t{gid}\t{gid}\t{gid}\t{gid}\nGroups:\t{groups}\n"
    )
    (entry / "cgroup").write_text(cgroup)
    (entry / "stat").write_text(f"{pid} (squat) ter) S 1 {pid} {pid} 0 -1 4194560 0 0 0 0\n")


def test_no_host_account_group_or_process_has_the_rig_uid_here() -> None:
    with pytest.raises(KeyError):
        pwd.getpwuid(RIG_UID)
    with pytest.raises(KeyError):
        grp.getgrgid(RIG_GID)
    assert probe.rig_uid_taken() is None


def test_a_host_process_with_the_rig_uid_or_gid_outside_enclosures_is_named(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    fake_process(proc, 10, uid=0, gid=0)
    fake_process(proc, 11, uid=RIG_UID, gid=RIG_GID, cgroup="4:memory:/srv/hangar-rigs/r1-ab\n0::/\n")  # enclosed
    (proc / "self").mkdir()
    assert probe.rig_uid_taken(proc) is None
    fake_process(proc, 12, uid=1000, gid=1000, groups=f"1000 {RIG_GID}")  # the rig group among its groups
    assert probe.rig_uid_taken(proc) == (
        f"uid {RIG_UID} or gid {RIG_GID}, which enclosed programs run as, is held by host process 12 ('squatter') "
        "outside any enclosure, which could read enclosed programs' secrets and reach the folders granted to them, "
        "so enclosures are off: stop it or run it as another user"
    )


def test_a_host_account_or_group_with_the_rig_uid_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    """The lookups go through the system's user database: made to look for uid and gid 0, they find root."""
    monkeypatch.setattr(probe, "RIG_UID", 0)
    assert "uid 0, which enclosed programs run as, belongs to the host account 'root'" in (probe.rig_uid_taken() or "")
    monkeypatch.setattr(probe, "RIG_UID", RIG_UID)
    monkeypatch.setattr(probe, "RIG_GID", 0)
    assert f"gid 0, which enclosed programs run as, belongs to the host group {grp.getgrgid(0).gr_name!r}" in (
        probe.rig_uid_taken() or ""
    )


def test_the_backend_asks_afresh_who_has_the_rig_uid(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if probe.host_reason() is not None:
        pytest.skip("enclosures cannot run here")
    backend = EnclosureBackend(tmp_path / "rigs", packs_root=tmp_path / "packs")
    first = backend.unavailable_reason()
    monkeypatch.setattr(probe, "RIG_UID", 0)  # an account took it while the server runs
    assert backend.unavailable_reason() is not None and "host account 'root'" in (backend.unavailable_reason() or "")
    monkeypatch.setattr(probe, "RIG_UID", RIG_UID)  # and gave it back
    assert backend.unavailable_reason() == first


def test_subordinate_ids_holding_the_rig_uid_or_gid_are_named(tmp_path: Path) -> None:
    """An account whose subordinate range holds the rig uid could map it in a user namespace of its own."""
    proc, etc = tmp_path / "proc", tmp_path / "etc"
    proc.mkdir()
    etc.mkdir()
    (etc / "subuid").write_text(f"alice:100000:65536\nbob:{RIG_UID - 65536}:65536\n")  # ends just below it
    (etc / "subgid").write_text(f"# not a range\nalice:100000:65536\ncarol:{RIG_GID + 1}:65536\n")  # starts above
    assert probe.rig_uid_taken(proc, etc) is None
    (etc / "subuid").write_text(f"alice:100000:65536\nbob:{RIG_UID - 65535}:65536\n")  # its last one
    assert probe.rig_uid_taken(proc, etc) == (
        f"uid {RIG_UID}, which enclosed programs run as, lies in the subordinate uids {etc}/subuid gives 'bob' "
        f"({RIG_UID - 65535}-{RIG_UID}), whose user namespaces could read enclosed programs' secrets and reach the "
        "folders granted to them, so enclosures are off: give it a range without it (usermod --del-subuids "
        f"{RIG_UID - 65535}-{RIG_UID} --add-subuids <another range> bob)"
    )
    (etc / "subuid").write_text("")
    (etc / "subgid").write_text(f"carol:{RIG_GID}:65536\n")  # its first one
    assert f"gid {RIG_GID}, which enclosed programs run as, lies in the subordinate gids" in (
        probe.rig_uid_taken(proc, etc) or ""
    )


def test_an_exiting_process_of_a_closing_rig_is_passed_over(tmp_path: Path) -> None:
    """An exiting process leaves its groups before it is gone: it reads as in the root groups meanwhile."""
    proc = tmp_path / "proc"
    fake_process(proc, 20, uid=RIG_UID, gid=RIG_GID, cgroup="4:memory:/\n0::/\n")
    stat = proc / "20" / "stat"
    running = stat.read_text()
    for leaving in (running.replace(" S ", " Z "), running.replace(" 4194560 ", f" {4194560 | probe.PF_EXITING} ")):
        stat.write_text(leaving)
        assert probe.rig_uid_taken(proc) is None
    stat.write_text(running)
    assert "host process 20 ('squatter')" in (probe.rig_uid_taken(proc) or "")
