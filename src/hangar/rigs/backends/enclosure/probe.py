"""What the enclosure backend needs from the host, and a clear sentence when something is missing."""

from __future__ import annotations

import ctypes.util
import os
import shutil
import sys
from pathlib import Path

from hangar.rigs.backends.enclosure.cgroups import CGROUP_ROOT, detect

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
