"""What the enclosure backend needs from the host, and a clear sentence when something is missing.

Among it: that no host account and no host process outside enclosures has the rig user's uid or group
(``RIG_UID``, ``RIG_GID``). Enclosed programs run as that uid on the host too (no user namespace maps it), so a
host process sharing it could read their environments (agents' keys, run credentials), trace them, and reach the
folders granted to them; the enclosure is then refused rather than run beside it.
"""

from __future__ import annotations

import ctypes.util
import grp
import os
import pwd
import shutil
import sys
from pathlib import Path

from hangar.core.guestacl import RIG_GID, RIG_UID
from hangar.rigs.backends.enclosure.cgroups import CGROUP_ROOT, GROUP_DIR, detect

# host tool -> the Debian package that provides it
HOST_TOOLS: dict[str, str] = {
    "bwrap": "bubblewrap",
    "nsenter": "util-linux",
    "unshare": "util-linux",
    "ip": "iproute2",
    "nft": "nftables",
}
# shared library (as ctypes finds it) -> the Debian package that provides it; libseccomp builds the rigs' filter
HOST_LIBRARIES: dict[str, str] = {"seccomp": "libseccomp2"}
NAMESPACES = ("mnt", "pid", "ipc", "uts", "net")
PF_EXITING = 0x4  # the kernel's flag for a task in its exit path, in /proc/<pid>/stat's flags field


def _missing_libraries() -> dict[str, str]:
    return {name: pkg for name, pkg in HOST_LIBRARIES.items() if ctypes.util.find_library(name) is None}


def missing_packages(path: str | None = None) -> list[str]:
    """Debian packages whose tools or libraries are missing here (what ``apt-get install`` would fix)."""
    tools = {pkg for tool, pkg in HOST_TOOLS.items() if not shutil.which(tool, path=path)}
    return sorted(tools | set(_missing_libraries().values()))


def unavailable_reason(
    *,
    path: str | None = None,
    proc_root: Path = Path("/proc"),
    cgroup_root: Path = CGROUP_ROOT,
    euid: int | None = None,
) -> str | None:
    """None when rigs can run here; else one sentence naming what is missing and how to get it."""
    return host_reason(path=path, proc_root=proc_root, cgroup_root=cgroup_root, euid=euid) or rig_uid_taken(proc_root)


def host_reason(
    *,
    path: str | None = None,
    proc_root: Path = Path("/proc"),
    cgroup_root: Path = CGROUP_ROOT,
    euid: int | None = None,
) -> str | None:
    """What this host lacks for rigs (tools, libraries, kernel features, cgroups, root), which does not change
    while the server runs; None when it lacks nothing."""
    if not sys.platform.startswith("linux"):
        return "the enclosure backend needs Linux namespaces; this host runs " + sys.platform
    uid = os.geteuid() if euid is None else euid
    if uid != 0:
        return (
            "the enclosure backend must run as root to create network namespaces and cgroups "
            f"(the server runs as uid {uid})"
        )
    missing = [
        f"{tool} (Debian package {pkg})" for tool, pkg in HOST_TOOLS.items() if not shutil.which(tool, path=path)
    ]
    if missing:
        return "the enclosure backend is missing host tools: " + ", ".join(missing)
    libraries = [f"lib{name} (Debian package {pkg})" for name, pkg in _missing_libraries().items()]
    if libraries:
        return "the enclosure backend is missing host libraries: " + ", ".join(libraries)
    absent = [ns for ns in NAMESPACES if not (proc_root / "self" / "ns" / ns).exists()]
    if absent:
        return "the kernel lacks namespaces the enclosure needs: " + ", ".join(absent)
    try:
        filesystems = (proc_root / "filesystems").read_text()
    except OSError:
        filesystems = ""
    if "overlay" not in filesystems.split():
        return "the kernel lacks overlayfs, which rig root filesystems are built on"
    version, reason = detect(cgroup_root)
    if version is None:
        return f"no usable cgroups for rig limits: {reason}"
    return None


_SHARED = "could read enclosed programs' secrets and reach the folders granted to them, so enclosures are off"


def rig_uid_taken(proc_root: Path = Path("/proc"), etc: Path = Path("/etc")) -> str | None:
    """None when no host account or group (as the system's user database answers, NSS), no account's subordinate
    ids (``/etc/subuid``, ``/etc/subgid``: what its user namespaces may map) and no running host process outside
    enclosures has the rig user's uid or group; else one sentence naming who has it and what to do. All of it can
    change while the server runs (an account added, a program started), so this is asked afresh before each
    enclosure starts: a few lookups, two small files and one pass over ``/proc``."""
    try:
        user = pwd.getpwuid(RIG_UID).pw_name
    except KeyError:
        pass
    else:
        return (
            f"uid {RIG_UID}, which enclosed programs run as, belongs to the host account {user!r}, whose processes "
            f"{_SHARED}: give that account another uid (usermod --uid) or remove it"
        )
    try:
        group = grp.getgrgid(RIG_GID).gr_name
    except KeyError:
        pass
    else:
        return (
            f"gid {RIG_GID}, which enclosed programs run as, belongs to the host group {group!r}, whose members "
            f"{_SHARED}: give that group another gid (groupmod --gid) or remove it"
        )
    for kind, wanted, flag in (("uid", RIG_UID, "subuids"), ("gid", RIG_GID, "subgids")):
        delegated = _delegated(etc / f"sub{kind}", wanted)
        if delegated is not None:
            owner, first, last = delegated
            return (
                f"{kind} {wanted}, which enclosed programs run as, lies in the subordinate {kind}s "
                f"{etc / f'sub{kind}'} gives {owner!r} ({first}-{last}), whose user namespaces {_SHARED}: give it a "
                f"range without it (usermod --del-{flag} {first}-{last} --add-{flag} <another range> {owner})"
            )
    found = _host_processes_of_rig_ids(proc_root)
    if not found:
        return None
    pid, name = found[0]
    return (
        f"uid {RIG_UID} or gid {RIG_GID}, which enclosed programs run as, is held by host process {pid} ({name!r}) "
        f"outside any enclosure, which {_SHARED}: stop it or run it as another user"
    )


def _delegated(path: Path, wanted: int) -> tuple[str, int, int] | None:
    """The (owner, first, last) of the range in a subordinate id file (``owner:first:count`` lines) holding
    ``wanted``; None when none does or the file is absent."""
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        owner, _, rest = line.strip().partition(":")
        first, _, count = rest.partition(":")
        if first.isdigit() and count.isdigit() and int(first) <= wanted < int(first) + int(count):
            return owner, int(first), int(first) + int(count) - 1
    return None


def _host_processes_of_rig_ids(proc_root: Path) -> list[tuple[int, str]]:
    """Running processes with the rig uid or gid (real, effective, saved, file system or supplementary) that are
    not in a rig's cgroup, as (pid, command name). Enclosed processes are always in one while they live: a rig's
    first process joins its cgroup before it drops to the rig user. One that is exiting (a closing rig's) leaves
    its groups before it is gone and then reads as in the root ones: it is passed over (checked after its groups
    are read, so one that starts exiting meanwhile is too)."""
    found = []
    for entry in proc_root.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status: dict[str, str] = {}
            for line in (entry / "status").read_text().splitlines():
                key, _, value = line.partition(":")
                status[key] = value
            uids = status.get("Uid", "").split()
            gids = status.get("Gid", "").split() + status.get("Groups", "").split()
            if str(RIG_UID) not in uids and str(RIG_GID) not in gids:
                continue
            groups = [line.split(":", 2)[-1] for line in (entry / "cgroup").read_text().splitlines()]
            if any(GROUP_DIR in Path(path).parts for path in groups) or _exiting(entry):
                continue
        except OSError:
            continue  # gone meanwhile
        found.append((int(entry.name), status.get("Name", "").strip()))
    return found


def _exiting(entry: Path) -> bool:
    """Whether the process is exiting or has exited (a zombie, or dead)."""
    fields = (entry / "stat").read_text().rpartition(")")[2].split()  # after the command name, which may hold ")"
    state, flags = fields[0], int(fields[6])
    return state in ("Z", "X") or bool(flags & PF_EXITING)
