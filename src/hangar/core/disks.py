"""Size-bounded directories for what confined user code writes: each scope's working directory (a pipeline run's,
a space's folder) is a small filesystem of its own, a sparse ext4 image loop-mounted on the directory, so a write
past the scope's quota fails with "No space left on device" and the host's disk never fills.

Why a filesystem per scope: it is the one bound the kernel enforces on every write, whoever writes and however many
files. Project quotas need the host filesystem mounted with ``prjquota`` (a data directory's usually is not);
``RLIMIT_FSIZE`` bounds one file, not a tree; accounting now and then lets a writer get gigabytes ahead between two
looks; a size-limited tmpfs would hold the bytes in memory and lose them at a restart. The image is sparse (a new
2 GiB one takes about a megabyte; making and mounting it takes about 20 ms) and mounted with ``discard``, so files
deleted inside give their space back to the host. Mounted ``nosuid,nodev``: nothing on it is a device or gains
privileges.

Images live under ``<dataDir>/disks/``: ``<name>.img`` and ``<name>.target`` (the directory it is mounted on),
outside anything an enclosure sees; a disk is named by its directory (``disk_of``: ``run-<runId>``,
``space-<workspaceId>-<spaceId>``), whichever enclosure writes there. A disk is made and mounted at first use
(``ensure``: before a scope's enclosure starts, before a worktree is checked out into a space's folder), stays
mounted (mounts are the host's: every process sharing the data directory sees the same, and ``flock`` on
``<name>.lock`` serialises them), is mounted again when a process starts after a reboot (``remount``), and goes
with its directory (``remove``: the mount is detached, the image deleted). The quotas are server settings read
when a disk is made: ``confine.runDiskMb`` for a pipeline run's directory, ``confine.spaceDiskMb`` for a space's
folder (worktrees included), ``confine.rigDiskMb`` for a rig's home; a disk keeps the size it was made with.

Each rig and enclosure also writes its own files (its root filesystem's changes: ``/tmp``, caches, installed
packages) to a disk of its own, ``confine.rigDiskMb`` too, made with it inside its runtime directory and gone
with it (``mount_private_disk``, ``detach``).

Making and mounting needs root, ``mkfs.ext4`` and loop devices; where they are missing directories stay unbounded
and every start says so. A directory that already holds files and has no image (made before disk quotas, or
written by trusted host execution) is left as it is, unbounded, with a warning: mounting over it would hide them.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import re
import secrets
import shutil
import subprocess
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

from hangar.core.beneath import remove_path
from hangar.core.settings import SettingSpec, strict_int
from hangar.errors import Unavailable

log = logging.getLogger("hangar.disks")

RUN_DISK_SETTING = "confine.runDiskMb"
SPACE_DISK_SETTING = "confine.spaceDiskMb"
RIG_DISK_SETTING = "confine.rigDiskMb"
DEFAULT_RUN_DISK_MB = 2048
DEFAULT_SPACE_DISK_MB = 8192
DEFAULT_RIG_DISK_MB = 4096
MIN_DISK_MB = 256
RUN_DISK_SPEC = SettingSpec(
    RUN_DISK_SETTING,
    "The disk quota of a pipeline run's working directory, in MB (for runs started after a change).",
    strict_int(RUN_DISK_SETTING, MIN_DISK_MB, 16 * 1024 * 1024),
)
SPACE_DISK_SPEC = SettingSpec(
    SPACE_DISK_SETTING,
    "The disk quota of a space's folder (its worktrees included), in MB (for folders made after a change).",
    strict_int(SPACE_DISK_SETTING, MIN_DISK_MB, 16 * 1024 * 1024),
)
RIG_DISK_SPEC = SettingSpec(
    RIG_DISK_SETTING,
    "The disk quota of each rig's and enclosure's own files (its root filesystem's changes; a rig's home), in MB.",
    strict_int(RIG_DISK_SETTING, MIN_DISK_MB, 16 * 1024 * 1024),
)
DISK_SPECS = (RUN_DISK_SPEC, SPACE_DISK_SPEC, RIG_DISK_SPEC)
_SETTING_OF_KIND = {
    "pipelineRun": (RUN_DISK_SETTING, DEFAULT_RUN_DISK_MB),
    "space": (SPACE_DISK_SETTING, DEFAULT_SPACE_DISK_MB),
}
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
MKFS = ("mkfs.ext4", "-q", "-F", "-m", "0", "-J", "size=16",
        "-E", "lazy_itable_init=1,lazy_journal_init=1,nodiscard,root_owner=0:0")  # fmt: skip
MOUNT_OPTIONS = "loop,nosuid,nodev,noatime,discard,noinit_itable"

ReadSetting = Callable[[str], Awaitable[Any]]


def disk_of(data_root: Path, target: Path) -> tuple[str, str, int] | None:
    """The disk name of a directory confined code writes, the setting naming its quota and the quota's default:
    ``<dataDir>/pipelines/<runId>`` is a run's, ``<dataDir>/<workspaceId>/spaces/<spaceId>`` a space's,
    ``<dataDir>/rigs/homes/<rigId>`` a rig's home. None for any other directory. Named by the directory, not by
    who writes it, so every enclosure mounting a directory finds the same disk."""
    try:
        parts = target.relative_to(data_root).parts
    except ValueError:
        return None
    safe = [_UNSAFE.sub("-", p) for p in parts]
    if len(parts) == 2 and parts[0] == "pipelines" and not parts[1].startswith("."):
        return f"run-{safe[1]}", RUN_DISK_SETTING, DEFAULT_RUN_DISK_MB
    if len(parts) == 3 and parts[1] == "spaces":
        return f"space-{safe[0]}-{safe[2]}", SPACE_DISK_SETTING, DEFAULT_SPACE_DISK_MB
    if len(parts) == 3 and parts[:2] == ("rigs", "homes"):
        return f"home-{safe[2]}", RIG_DISK_SETTING, DEFAULT_RIG_DISK_MB
    return None


def host_reason() -> str | None:
    """None when this process can make and mount disks; else what is missing."""
    if os.geteuid() != 0:
        return "the server does not run as root"
    if shutil.which("mkfs.ext4") is None or shutil.which("mount") is None:
        return "mkfs.ext4 or mount is missing (Debian packages e2fsprogs, mount)"
    if not os.path.exists("/dev/loop-control"):
        return "this host has no loop devices (/dev/loop-control)"
    return None


class ScopeDisks:
    """The bounded directories of one data directory (``root`` is ``<dataDir>/disks``)."""

    def __init__(self, root: Path, read_setting: ReadSetting | None = None) -> None:
        self.root = root
        self.data_root = root.parent
        self._read = read_setting
        self._reason = host_reason()

    def unavailable_reason(self) -> str | None:
        return self._reason

    async def size_mb(self, setting: str, default: int) -> int:
        value = await self._read(setting) if self._read is not None else None
        return value if isinstance(value, int) and value >= MIN_DISK_MB else default

    async def rig_disk_mb(self) -> int:
        """The size of a new rig's own disk and home (``confine.rigDiskMb``)."""
        return await self.size_mb(RIG_DISK_SETTING, DEFAULT_RIG_DISK_MB)

    async def ensure(self, target: Path) -> bool:
        """Mount ``target``'s disk on it, making the disk first if needed; True when ``target`` is bounded (False
        for a directory that has no kind of disk, see ``disk_of``). ``Unavailable`` when making or mounting failed
        on a host that can."""
        disk = disk_of(self.data_root, target)
        if self._reason is not None or disk is None:
            return False
        name, setting, default = disk
        return await asyncio.to_thread(self._ensure, name, target, await self.size_mb(setting, default))

    async def remove(self, target: Path) -> None:
        """Detach ``target``'s disk, delete the image, then remove ``target`` (without following a symlink in it,
        whatever is left there)."""
        disk = disk_of(self.data_root, target)
        if disk is None:
            await asyncio.to_thread(_remove_dir, target)
            return
        await asyncio.to_thread(self._remove, disk[0], target)

    async def remount(self) -> int:
        """Mount every disk whose directory is not mounted (after a reboot); returns how many."""
        if self._reason is not None:
            return 0
        return await asyncio.to_thread(self._remount)

    # -- the work, in a thread, under the disk's lock ---------------------------------------------------------

    @contextlib.contextmanager
    def _locked(self, name: str) -> Iterator[None]:
        self.root.mkdir(parents=True, exist_ok=True)
        os.chmod(self.root, 0o700)
        fd = os.open(self.root / f"{name}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _ensure(self, name: str, target: Path, size_mb: int) -> bool:
        with self._locked(name):
            if os.path.ismount(target):
                return True
            image = self.root / f"{name}.img"
            target.mkdir(parents=True, exist_ok=True)
            if not image.exists():
                with os.scandir(target) as listing:
                    if next(listing, None) is not None:
                        log.warning("%s holds files made before it had a disk quota: it stays unbounded", target)
                        return False
                _make(image, size_mb, self.root / "templates")
                (self.root / f"{name}.target").write_text(str(target))
            _mount(image, target)
            with contextlib.suppress(OSError):
                (target / "lost+found").rmdir()  # the new filesystem's; nobody here needs it
            return True

    def _remove(self, name: str, target: Path) -> None:
        with self._locked(name):
            detach(target)
            (self.root / f"{name}.img").unlink(missing_ok=True)
            (self.root / f"{name}.target").unlink(missing_ok=True)
            _remove_dir(target)
        (self.root / f"{name}.lock").unlink(missing_ok=True)

    def _remount(self) -> int:
        done = 0
        for image in sorted(self.root.glob("*.img")) if self.root.is_dir() else []:
            name = image.name.removesuffix(".img")
            try:
                target = Path((self.root / f"{name}.target").read_text())
            except OSError:
                continue
            with self._locked(name):
                if not image.exists() or not target.is_dir() or os.path.ismount(target):
                    continue
                try:
                    _mount(image, target)
                except Unavailable as exc:
                    log.warning("%s", exc.message)
                    continue
            done += 1
        return done


def mount_private_disk(image: Path, target: Path, size_mb: int, templates: Path) -> bool:
    """Make a disk at ``image`` and mount it on ``target`` (both inside a directory the caller owns and removes:
    a rig's own disk; ``templates`` is where empty disks are kept to copy); False where this host cannot
    (``host_reason``), so the caller goes on unbounded."""
    if host_reason() is not None:
        return False
    image.parent.mkdir(parents=True, exist_ok=True)
    _make(image, size_mb, templates)
    target.mkdir(parents=True, exist_ok=True)
    _mount(image, target)
    with contextlib.suppress(OSError):
        (target / "lost+found").rmdir()
    return True


def detach(target: Path) -> None:
    """Detach the disk mounted on ``target`` (lazily: a process still inside keeps its view until it ends)."""
    if os.path.ismount(target):
        _run(("umount", "--lazy", str(target)), f"detach the disk of {target}")


def full_note(path: Path, setting: str) -> str | None:
    """When ``path`` is a disk with no room left: a sentence naming its quota and ``setting``."""
    try:
        if not os.path.ismount(path):
            return None
        st = os.statvfs(path)
    except OSError:
        return None
    if st.f_bavail * st.f_frsize >= 1024 * 1024 and st.f_favail > 0:
        return None
    usable = st.f_blocks * st.f_frsize // (1024 * 1024)
    return f"its disk is full ({usable} MB usable; the quota is the server setting {setting})"


def _make(image: Path, size_mb: int, templates: Path) -> None:
    """A new disk at ``image``: a sparse copy of an empty filesystem of that size, made once under ``templates``
    (copying its few written megabytes takes a few milliseconds; making one takes tens, which every rig would pay
    twice at boot)."""
    template = templates / f"ext4-{size_mb}.img"
    if not template.exists():
        templates.mkdir(parents=True, exist_ok=True)
        os.chmod(templates, 0o700)
        fresh = templates / f".ext4-{size_mb}-{os.getpid()}-{secrets.token_hex(4)}.img"
        try:
            with open(fresh, "wb") as f:
                f.truncate(size_mb * 1024 * 1024)  # sparse: blocks are taken as they are written
            os.chmod(fresh, 0o600)
            _run((*MKFS, str(fresh)), f"make a {size_mb} MB disk")
            os.replace(fresh, template)  # whichever process finishes first, every template is the same
        finally:
            fresh.unlink(missing_ok=True)
    tmp = image.with_name(f".{image.name}.{secrets.token_hex(4)}")
    try:
        _sparse_copy(template, tmp)
        os.replace(tmp, image)
    finally:
        tmp.unlink(missing_ok=True)


def _sparse_copy(src: Path, dst: Path) -> None:
    """Copy ``src``'s data extents into a new ``dst`` of the same size, leaving its holes holes."""
    fin = os.open(src, os.O_RDONLY | os.O_CLOEXEC)
    try:
        fout = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            size = os.fstat(fin).st_size
            os.ftruncate(fout, size)
            offset = 0
            while offset < size:
                try:
                    start = os.lseek(fin, offset, os.SEEK_DATA)
                except OSError:  # ENXIO: only a hole is left
                    break
                end = os.lseek(fin, start, os.SEEK_HOLE)
                while start < end:
                    start += os.copy_file_range(fin, fout, end - start, start, start)
                offset = end
        finally:
            os.close(fout)
    finally:
        os.close(fin)


def _mount(image: Path, target: Path) -> None:
    _run(("mount", "-t", "ext4", "-o", MOUNT_OPTIONS, str(image), str(target)), f"mount the disk of {target}")


def _run(argv: tuple[str, ...], what: str) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=120)
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip()[-300:]
        raise Unavailable(f"could not {what}: {said or f'{argv[0]} exited with status {done.returncode}'}")


def _remove_dir(path: Path) -> None:
    """Remove what a guest wrote at ``path`` (a directory in a server-made folder) without following anything in
    it; a live guest still writing there leaves it for a later cleanup."""
    with contextlib.suppress(OSError):
        remove_path(path)
