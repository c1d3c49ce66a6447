"""Memory and CPU limits, parking (freezer) and resident memory for one rig, through cgroups v1 or v2.

Which one is detected at run time: a cgroup2 root at ``/sys/fs/cgroup`` means v2; otherwise the v1
``memory``, ``cpu``, ``freezer`` and ``pids`` hierarchies are used (a v2 hierarchy mounted elsewhere, such as
``/sys/fs/cgroup/unified``, carries no controllers then and is ignored). Rig groups are created beneath the
server's own group in each hierarchy, so whatever limits the server runs under also bound its rigs.

Resident memory is the working set the way container runtimes report it: usage minus inactive file cache.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import time
from abc import ABC, abstractmethod
from pathlib import Path

from hangar.errors import Internal

CGROUP_ROOT = Path("/sys/fs/cgroup")
V1_CONTROLLERS = ("memory", "cpu", "freezer", "pids")
CPU_PERIOD_US = 100_000
PIDS_MAX = 4096
GROUP_DIR = "hangar-rigs"


def _own_path(controller: str | None) -> str:
    """This process's group path in a v1 hierarchy (``controller``) or in v2 (None)."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, names, path = line.split(":", 2)
        if (controller is None and names == "") or (controller and controller in names.split(",")):
            return path
    return "/"


def detect(root: Path = CGROUP_ROOT) -> tuple[str | None, str | None]:
    """(version, None) with version "v1" or "v2", or (None, reason) when no usable cgroups exist."""
    controllers = root / "cgroup.controllers"
    if controllers.is_file():
        have = set(controllers.read_text().split())
        missing = {"memory", "cpu", "pids"} - have
        if missing:
            return None, f"cgroup v2 lacks the {', '.join(sorted(missing))} controller(s)"
        return "v2", None
    absent = [c for c in V1_CONTROLLERS if not (root / c / "cgroup.procs").is_file()]
    if absent:
        return None, f"no cgroup v2 root and no cgroup v1 hierarchy for {', '.join(absent)}"
    return "v1", None


class RigCgroup(ABC):
    """One rig's group. ``procs_files`` are written with a pid to move a process in before it starts."""

    @abstractmethod
    def create(self, memory_mb: int, vcpus: int) -> None: ...

    @abstractmethod
    def procs_files(self) -> list[Path]: ...

    @abstractmethod
    def freeze(self) -> None: ...

    @abstractmethod
    def thaw(self) -> None: ...

    @abstractmethod
    def frozen(self) -> bool: ...

    @abstractmethod
    def resident_bytes(self) -> int: ...

    @abstractmethod
    def pids(self) -> list[int]: ...

    @abstractmethod
    def oom_kills(self) -> int:
        """How many processes the kernel killed in this group for exceeding its memory limit."""

    @abstractmethod
    def remove(self) -> None: ...

    @abstractmethod
    def exists(self) -> bool: ...

    def kill_all(self, timeout_s: float = 5.0) -> None:
        """Kill every process in the group (frozen first, so nothing forks away meanwhile)."""
        with contextlib.suppress(OSError):
            self.freeze()
        deadline = time.monotonic() + timeout_s
        while True:
            pids = self.pids()
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                self.thaw()  # killed processes only die once thawed
            if not pids or time.monotonic() > deadline:
                return
            time.sleep(0.01)


def _write(path: Path, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


def _stat(path: Path) -> dict[str, int]:
    values: dict[str, int] = {}
    for line in path.read_text().splitlines():
        key, _, value = line.partition(" ")
        with contextlib.suppress(ValueError):
            values[key] = int(value)
    return values


def _rmdir(path: Path, timeout_s: float = 2.0) -> None:
    deadline = time.monotonic() + timeout_s
    while path.exists():
        try:
            path.rmdir()
        except OSError as exc:
            if exc.errno != errno.EBUSY or time.monotonic() > deadline:
                return
            time.sleep(0.01)


class CgroupV1(RigCgroup):
    def __init__(self, rig_name: str, root: Path = CGROUP_ROOT) -> None:
        self.dirs = {c: root / c / _own_path(c).lstrip("/") / GROUP_DIR / rig_name for c in V1_CONTROLLERS}

    def create(self, memory_mb: int, vcpus: int) -> None:
        for path in self.dirs.values():
            path.mkdir(parents=True, exist_ok=True)
        mem = self.dirs["memory"]
        _write(mem / "memory.limit_in_bytes", str(memory_mb * 1024 * 1024))
        if (mem / "memory.memsw.limit_in_bytes").exists():
            with contextlib.suppress(OSError):  # swap accounting may be off
                _write(mem / "memory.memsw.limit_in_bytes", str(memory_mb * 1024 * 1024))
        _write(self.dirs["cpu"] / "cpu.cfs_period_us", str(CPU_PERIOD_US))
        _write(self.dirs["cpu"] / "cpu.cfs_quota_us", str(vcpus * CPU_PERIOD_US))
        _write(self.dirs["pids"] / "pids.max", str(PIDS_MAX))

    def procs_files(self) -> list[Path]:
        return [path / "cgroup.procs" for path in self.dirs.values()]

    def freeze(self) -> None:
        _write(self.dirs["freezer"] / "freezer.state", "FROZEN")
        deadline = time.monotonic() + 5
        while not self.frozen() and time.monotonic() < deadline:
            time.sleep(0.002)

    def thaw(self) -> None:
        _write(self.dirs["freezer"] / "freezer.state", "THAWED")

    def frozen(self) -> bool:
        return (self.dirs["freezer"] / "freezer.state").read_text().strip() == "FROZEN"

    def resident_bytes(self) -> int:
        mem = self.dirs["memory"]
        usage = int((mem / "memory.usage_in_bytes").read_text())
        return max(0, usage - _stat(mem / "memory.stat").get("total_inactive_file", 0))

    def pids(self) -> list[int]:
        found: set[int] = set()
        for procs in self.procs_files():
            with contextlib.suppress(OSError):
                found.update(int(p) for p in procs.read_text().split())
        return sorted(found)

    def oom_kills(self) -> int:
        with contextlib.suppress(OSError):
            return _stat(self.dirs["memory"] / "memory.oom_control").get("oom_kill", 0)
        return 0

    def remove(self) -> None:
        for path in self.dirs.values():
            _rmdir(path)

    def exists(self) -> bool:
        return any(path.exists() for path in self.dirs.values())


class CgroupV2(RigCgroup):
    def __init__(self, rig_name: str, root: Path = CGROUP_ROOT) -> None:
        self.root = root
        self.parent = self._parent()
        self.dir = self.parent / rig_name

    def _parent(self) -> Path:
        """Beneath our own group when it can delegate controllers, else beneath the root."""
        own = self.root / _own_path(None).lstrip("/")
        candidates = [own, self.root] if own != self.root else [self.root]
        for base in candidates:
            try:
                _write(base / "cgroup.subtree_control", "+memory +cpu +pids")
                parent = base / GROUP_DIR
                parent.mkdir(exist_ok=True)
                _write(parent / "cgroup.subtree_control", "+memory +cpu +pids")
                return parent
            except OSError:
                continue  # a group holding processes cannot enable controllers for children
        raise Internal("cannot enable the memory, cpu and pids controllers for rig cgroups")

    def create(self, memory_mb: int, vcpus: int) -> None:
        self.dir.mkdir(exist_ok=True)
        _write(self.dir / "memory.max", str(memory_mb * 1024 * 1024))
        with contextlib.suppress(OSError):
            _write(self.dir / "memory.swap.max", "0")
        _write(self.dir / "cpu.max", f"{vcpus * CPU_PERIOD_US} {CPU_PERIOD_US}")
        _write(self.dir / "pids.max", str(PIDS_MAX))

    def procs_files(self) -> list[Path]:
        return [self.dir / "cgroup.procs"]

    def freeze(self) -> None:
        _write(self.dir / "cgroup.freeze", "1")
        deadline = time.monotonic() + 5
        while not self.frozen() and time.monotonic() < deadline:
            time.sleep(0.002)

    def thaw(self) -> None:
        _write(self.dir / "cgroup.freeze", "0")

    def frozen(self) -> bool:
        return "frozen 1" in (self.dir / "cgroup.events").read_text()

    def resident_bytes(self) -> int:
        usage = int((self.dir / "memory.current").read_text())
        return max(0, usage - _stat(self.dir / "memory.stat").get("inactive_file", 0))

    def pids(self) -> list[int]:
        with contextlib.suppress(OSError):
            return sorted(int(p) for p in (self.dir / "cgroup.procs").read_text().split())
        return []

    def kill_all(self, timeout_s: float = 5.0) -> None:
        if (self.dir / "cgroup.kill").exists():
            with contextlib.suppress(OSError):
                _write(self.dir / "cgroup.kill", "1")
        super().kill_all(timeout_s)

    def oom_kills(self) -> int:
        with contextlib.suppress(OSError):
            return _stat(self.dir / "memory.events").get("oom_kill", 0)
        return 0

    def remove(self) -> None:
        _rmdir(self.dir)

    def exists(self) -> bool:
        return self.dir.exists()


def rig_cgroup(version: str, rig_name: str) -> RigCgroup:
    return CgroupV2(rig_name) if version == "v2" else CgroupV1(rig_name)
