"""The backend interface every rig backend implements; the rig manager codes only against it.

A backend turns a ``RigSpec`` into a running machine and hands back a ``RigHandle``. The manager owns
records, phases, budgets and take-over; the backend owns isolation, the root filesystem, limits, the exec
channel, the PTY, ports, the egress gate and file access confined to the rig. The manager must not care which
backend runs a rig.

What a running rig can do is split into capabilities (``capabilities``: exec, power, network, files, browser);
``RigHandle`` is a rig with all of them and a lifetime. Resources (``RigHandle``, ``Pty``) are closed with
``aclose``, which is safe to call twice.
Errors come from ``hangar.errors``: ``Unavailable`` when the host lacks something, ``InvalidArgs`` for bad
input (naming the field), ``Refused`` when a rule says no (a path escaping the rig), ``Conflict`` for an
existing file or a taken port, ``Internal`` for the unexpected. The manager wraps backend failures into
``hangar.rigs.errors.BackendFailure``.

Guest paths are absolute paths inside the rig (``/home/rig/drops/a.txt``); a backend resolves them against the
rig root without following symlinks out of it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from hangar.core.confine import ExecResult
from hangar.core.disks import DEFAULT_RIG_DISK_MB
from hangar.errors import NotFound
from hangar.rigs.backends.capabilities import (
    Command,
    Pty,
    RigBrowser,
    RigDesktop,
    RigExec,
    RigFiles,
    RigNetwork,
    RigPower,
)
from hangar.rigs.images.packs import PackStatus
from hangar.rigs.images.refresh import Record

__all__ = ["Command", "ExecResult", "GuestTree", "Pty", "RigBackend", "RigHandle", "RigSpec"]

GUEST_WORKTREE = "/home/rig/worktree"  # where a rig sees its mounted worktree (or a run's working directory)


@dataclass(frozen=True)
class GuestTree:
    """A host directory guests write (a space's folder, a worktree in it, a pipeline run's directory), named by
    the server-made ``folder`` holding it and a relative path ``beneath`` that folder (``""``: the folder itself).

    A backend opens ``folder`` without following its last component and ``beneath`` inside it without following
    any symlink (``hangar.core.beneath``), then mounts, walks and grants the directory it opened, never the path
    by name: a tree swapped for a symlink is refused, and one swapped after the check is not the one mounted."""

    folder: Path
    beneath: str = ""
    # Mounted read-only: the guests read the tree and every write in it fails (EROFS), whatever their permissions.
    read_only: bool = False

    @property
    def path(self) -> Path:
        """Where the tree is by name: for messages and records, never for opening it."""
        return self.folder / self.beneath if self.beneath else self.folder


@dataclass(frozen=True)
class RigSpec:
    """What to start. Limits come from the spec's limits table for the surface."""

    rig_id: str
    workspace_id: str
    surface: str  # "terminal", "browser", "computer" or "mobile"
    memory_mb: int
    vcpus: int
    allow_hosts: frozenset[str]  # egress allowlist: exact names or "*.suffix"
    home_dir: Path | None  # host dir bind-mounted as the rig user's home (~/drops lands there), or None
    worktree: GuestTree | None  # a guest-writable host tree mounted at GUEST_WORKTREE (drops never land in it)
    engine: str | None = None  # browser rigs: "engine-a", "engine-b" or "engine-c", for the rig's whole life
    display: tuple[int, int] | None = None  # boot display (width, height) for surfaces with a screen
    trust_pem: bytes | None = None  # a CA certificate (public part only) the rig's browser trusts: dev domains
    disk_mb: int = DEFAULT_RIG_DISK_MB  # the rig's own files (its root filesystem's changes) fit in this
    image_id: str | None = None  # a full VM's imported image (its id among the server's records, never a path)


class RigHandle(RigExec, RigPower, RigNetwork, RigFiles, RigBrowser, RigDesktop, ABC):
    """A running rig with every capability (``capabilities``) and its lifetime. Every method except ``alive``
    and ``aclose`` may raise ``Unavailable`` once the rig died."""

    spec: RigSpec

    @abstractmethod
    def alive(self) -> bool:
        """True while the rig's init process runs (a parked rig is alive)."""

    @abstractmethod
    async def wait_dead(self) -> None:
        """Return when the rig's processes died underneath (after ``aclose`` it also returns). The manager
        watches this to mark the rig ``failed`` with ``backendFailure``."""

    def death_detail(self) -> str:
        """Why the rig died, once ``wait_dead`` returned: the status detail of its ``failed`` row."""
        return "the rig's processes died underneath it"

    @abstractmethod
    async def aclose(self) -> None:
        """Destroy the rig: kill its processes, stop forwards and the egress gate, delete its disk (the
        per-rig layer; the bind-mounted home and worktree stay). Safe to call twice."""


class RigBackend(ABC):
    """A way of running rigs on this host."""

    name: ClassVar[str]  # "enclosure"
    # Whether the backend can boot a workspace's custom registry image (rigs.microvm.execImage); the enclosure
    # boots its own pre-extracted pack only.
    boots_registry_images: ClassVar[bool] = False

    @abstractmethod
    def unavailable_reason(self) -> str | None:
        """None when this backend can run rigs on this host; else one clear sentence saying what is
        missing."""

    async def availability(self) -> str | None:
        """``unavailable_reason`` at the moment of an open, for a backend whose answer depends on what may change
        meanwhile (server settings, a device coming and going); one sentence of what is missing and how to
        provide it, or None."""
        return self.unavailable_reason()

    @abstractmethod
    async def start(self, spec: RigSpec, progress: Callable[[str], None]) -> RigHandle:
        """Boot a rig for ``spec``; call ``progress`` with short step texts (e.g. building the image pack)
        while provisioning. Raises ``Unavailable`` when the host cannot run it (with ``unavailable_reason``'s
        text)."""

    def packs(self) -> list[PackStatus]:
        """The image packs this backend boots from, each with its state (none for a backend without packs)."""
        return []

    async def refresh_packs(self, due: Callable[[Record | None], bool]) -> None:
        """Check the ready packs ``due`` (by their last check's record) against their archives, rebuild the stale
        ones in the background, and remove old versions no rig boots from (nothing for a backend without packs)."""
        return None

    async def sweep_packs(self) -> None:
        """Remove the old versions of packs that no rig boots from any more (nothing without packs)."""
        return None

    def build_pack(self, name: str) -> None:
        """Start building pack ``name`` in the background unless it is ready or building already."""
        raise NotFound(f"the {self.name} backend has no pack {name!r}")

    async def aclose(self) -> None:
        """Stop background work (a pack build under way); the server is stopping."""
        return None
