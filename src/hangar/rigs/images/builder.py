"""Rig images: Debian root filesystems built once with mmdebstrap and kept as pre-extracted packs.

A pack lives at ``<packs_root>/<recipe name>/`` (``packs_root`` is ``<dataDir>/rigs/microvm-packs``). Its name
is its cache key: the terminal pack is keyed by the toolset revision ``tools-v1``; a browser pack by the image,
the engine and the audio revision ``audio-v1-<engine>`` (``recipes.py``), so packs are never shared between
engines and a change of packages moves the key instead of reusing an old pack. Every name also carries the base
revision ``BASE_REVISION`` (what every pack holds besides its packages: the rig user and its uid), so a change
there moves every key at once: the packs are built again once, and a server of an older version sharing the
directory keeps booting its own. Rigs mount a pack read-only as the lower layer of their root filesystem.

Building takes a minute or more, so it happens once: a file lock makes concurrent first opens (threads, tasks
or processes) wait for a single build, and the build happens in a temporary sibling directory that is put in
place only when complete (a ``.hangar-pack.json`` marker inside says so, with when it was built and the release
dates of the archives it was built from), as a new version the pack's name then points at (``versions``). A ready
pack whose archive released since is built again the same way (``rebuild_pack``, asked by ``refresh``) while the
old version keeps serving. The builder writes its current
step beside the lock (``<name>.progress``), so whoever waits, in any process, shows how far the build has got.
A stopped build (its caller cancelled or died) takes its processes and mounts with it and leaves only a
temporary directory, removed by the next build.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import logging
import os
import shutil
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from hangar.core.guestacl import RIG_GID, RIG_UID
from hangar.errors import Internal, Unavailable
from hangar.rigs.images import mirror, versions
from hangar.rigs.images.archive import release_dates, stamp
from hangar.rigs.images.mirror import debian_sources

# Kept apart so that naming the packs does not load the builder; re-exported, since every caller building a pack
# names the terminal's recipe here.
from hangar.rigs.images.packrecipe import BASE_REVISION as BASE_REVISION
from hangar.rigs.images.packrecipe import PACK_NAME as PACK_NAME
from hangar.rigs.images.packrecipe import PACKAGES as PACKAGES
from hangar.rigs.images.packrecipe import RELEASE as RELEASE
from hangar.rigs.images.packrecipe import TERMINAL as TERMINAL
from hangar.rigs.images.packrecipe import TOOLSET_REVISION as TOOLSET_REVISION
from hangar.rigs.images.packrecipe import PackRecipe as PackRecipe

MARKER = ".hangar-pack.json"
# The marker's format: 2 means built from the release with its -updates and -security suites. A pack built
# before (from the release alone: browsers without their security fixes) is rebuilt once.
MARKER_FORMAT = 2
RIG_USER = "rig"
log = logging.getLogger(__name__)

LOCK_POLL_S = 0.5  # how often a caller waiting for another caller's build looks at the lock and its progress

# What a build runs, with the Debian package of each: mmdebstrap, and util-linux to tie the build's processes
# (and, as root, its mounts) to the caller (``_contained``).
BUILD_TOOLS: dict[str, str] = {"mmdebstrap": "mmdebstrap", "setpriv": "util-linux", "unshare": "util-linux"}

# mmdebstrap's own step lines, in order, mapped to what a person reads in the progress bar.
STEPS: tuple[tuple[str, str], ...] = (
    ("chosen mode", "preparing"),
    ("setting up", "preparing"),
    ("running apt-get update", "fetching package lists"),
    ("downloading packages", "downloading packages"),
    ("extracting archives", "extracting base system"),
    ("installing essential", "installing base system"),
    ("installing remaining", "installing the packages"),
    ("running --customize-hook", "creating the rig user"),
    ("cleaning", "cleaning up"),
    ("success", "done"),
)

# Every pack: the rig user (RIG_UID, the uid rigs run as) owns its home; the rig's own resolver and host name are
# written at boot, so the image keeps empty ones. --no-log-init: useradd would otherwise write the user's record
# into lastlog and faillog at an offset of the uid times the record's size, a sparse file of hundreds of GB.
_BASE_HOOKS: tuple[str, ...] = (
    f'chroot "$1" groupadd --gid {RIG_GID} {RIG_USER}',
    f'chroot "$1" useradd --create-home --no-log-init --uid {RIG_UID} --gid {RIG_GID} --shell /bin/bash {RIG_USER}',
    'echo "C.UTF-8 UTF-8" > "$1/etc/locale.gen"',
    'rm -f "$1/etc/resolv.conf" "$1/etc/hostname"; touch "$1/etc/resolv.conf"',
)


@dataclass(frozen=True)
class PackInfo:
    path: Path
    revision: str
    built_in_s: float | None  # None when the pack already existed


ProgressFn = Callable[[str], None]


def pack_path(packs_root: Path, recipe: PackRecipe = TERMINAL) -> Path:
    return packs_root / recipe.name


def pack_ready(packs_root: Path, recipe: PackRecipe = TERMINAL) -> bool:
    marker = pack_path(packs_root, recipe) / MARKER
    try:
        found = json.loads(marker.read_text())
        return bool(
            found["revision"] == recipe.revision
            and found.get("format") == MARKER_FORMAT
            and found.get("rigUid") == RIG_UID
            and found.get("rigGid") == RIG_GID
        )
    except (OSError, ValueError, KeyError, TypeError):
        return False


def step_of(line: str) -> tuple[int, str] | None:
    """Which build step an mmdebstrap output line announces (index into ``STEPS``), if any."""
    low = line.lower()
    if not low.startswith("i:"):
        return None
    for index, (needle, label) in enumerate(STEPS):
        if needle in low:
            return index, label
    return None


def missing_tools() -> list[str]:
    """The host tools a build needs and cannot find, each with its Debian package."""
    return [f"{tool} (Debian package {pkg})" for tool, pkg in BUILD_TOOLS.items() if shutil.which(tool) is None]


def build_under_way(packs_root: Path, recipe: PackRecipe = TERMINAL) -> str | None:
    """The current step of a build of ``recipe`` under way in any process (its lock is held), or None."""
    try:
        fd = os.open(_lock_path(packs_root, recipe), os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)  # free: nobody builds (closing releases it again)
        return None
    except BlockingIOError:
        return _read_progress(packs_root, recipe) or f"building the {recipe.label}"
    finally:
        os.close(fd)


async def ensure_pack(
    packs_root: Path, progress: ProgressFn | None = None, recipe: PackRecipe = TERMINAL, apt_root: Path | None = None
) -> PackInfo:
    """Return the ready pack, building it first if needed (once, whoever asks concurrently, in any process):
    a caller that finds a build under way waits for it, hearing its steps."""
    if pack_ready(packs_root, recipe):
        return PackInfo(pack_path(packs_root, recipe), recipe.revision, None)
    built = await _locked_build(packs_root, recipe, progress, apt_root, lambda: not pack_ready(packs_root, recipe))
    return PackInfo(pack_path(packs_root, recipe), recipe.revision, built)


async def rebuild_pack(
    packs_root: Path,
    recipe: PackRecipe,
    still_needed: Callable[[], bool],
    progress: ProgressFn | None = None,
    apt_root: Path | None = None,
) -> float | None:
    """Build a new version of a pack that is ready (its archive has moved on), under the same lock as a first
    build, and put it in place of the old one when complete; the old one keeps serving until then and stays for
    the rigs booted from it (``versions``). ``still_needed`` is asked again once the lock is held (another
    process may have rebuilt it meanwhile). Returns the seconds the build took, or None when it was not needed."""
    return await _locked_build(packs_root, recipe, progress, apt_root, still_needed)


async def _locked_build(
    packs_root: Path,
    recipe: PackRecipe,
    progress: ProgressFn | None,
    apt_root: Path | None,
    needed: Callable[[], bool],
) -> float | None:
    report = progress or (lambda _text: None)
    _mkdir(packs_root)
    lock_fd = os.open(_lock_path(packs_root, recipe), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        await _take_lock(lock_fd, packs_root, recipe, report)
        if not needed():  # someone else built it while we waited
            return None
        started = time.monotonic()
        _progress_path(packs_root, recipe).unlink(missing_ok=True)  # a killed builder's last step is not ours

        def relay(text: str) -> None:
            report(text)
            _write_progress(packs_root, recipe, text)

        try:
            await _build(packs_root, recipe, relay, apt_root)
        finally:
            _progress_path(packs_root, recipe).unlink(missing_ok=True)
        return time.monotonic() - started
    finally:
        os.close(lock_fd)  # closing releases the lock


async def _take_lock(fd: int, packs_root: Path, recipe: PackRecipe, report: ProgressFn) -> None:
    """Take the build lock; while another caller holds it (it is building), relay that build's steps. Polled
    rather than a blocking ``flock`` in a thread, so a waiter that is cancelled leaves no thread behind to take
    the lock later."""
    said: str | None = None
    waiting = False
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            pass
        if not waiting:
            waiting = True
            report(f"waiting for the {recipe.label} build lock")
        step = _read_progress(packs_root, recipe)
        if step is not None and step != said:
            said = step
            report(step)
        await asyncio.sleep(LOCK_POLL_S)


async def _build(packs_root: Path, recipe: PackRecipe, report: ProgressFn, apt_root: Path | None) -> None:
    missing = missing_tools()
    if missing:
        raise Unavailable(f"building the {recipe.label} needs {', '.join(missing)}")
    sources = debian_sources(RELEASE, apt_root or mirror.APT_ROOT)  # read now: tests point it elsewhere
    main_archive = sources[0].split()[1]
    dates = await _archive_dates(sources, recipe)
    tmp = _clear_stale(packs_root, recipe)
    report(f"building the {recipe.label} ({recipe.revision}) from {main_archive}")
    argv = [
        "mmdebstrap",
        "--variant=apt",
        f"--mode={'root' if os.geteuid() == 0 else 'unshare'}",
        f"--include={','.join(recipe.packages)}",
        *(f"--customize-hook={hook}" for hook in (*_BASE_HOOKS, *recipe.hooks)),
        RELEASE,
        str(tmp),
        *sources,
    ]
    proc = await asyncio.create_subprocess_exec(
        *_contained(argv), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, start_new_session=True
    )
    try:
        tail = await _follow(proc, recipe, report)
        code = await proc.wait()
    except BaseException:  # cancelled (the server stops, the caller gave up): the build goes with it
        await _stop(proc)
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if code != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        # Its last lines say why (a mirror's answer, a package missing); where the packs live is the host's own.
        said = " | ".join(line.replace(str(packs_root), "<packs>") for line in tail[-5:])
        raise Internal(f"mmdebstrap failed with exit code {code}: {said}")
    _commit(tmp, packs_root, recipe, sources, dates)
    report(f"{recipe.label} ready")
    versions.sweep(packs_root, recipe.name)


async def _archive_dates(sources: list[str], recipe: PackRecipe) -> dict[str, str]:
    """The release dates of the suites the pack is built from, read before the build (a suite released during it
    makes the pack look older than it is, so it is built again once more: never the reverse). A date that cannot
    be read is left out and the pack counts as stale at the next check."""
    try:
        return {suite: stamp(when) for suite, when in (await release_dates(sources)).items()}
    except (Unavailable, ValueError) as exc:
        log.warning("rigs: pack %s: the archive's release dates could not be read: %s", recipe.name, exc)
        return {}


def _contained(argv: list[str]) -> list[str]:
    """``argv`` so that the build dies with the process that started it (``--pdeathsig``), and, as root, runs in
    mount and PID namespaces of its own: mmdebstrap's mounts (/proc, /sys, device nodes in the new root) and its
    processes go when it does, however it ends, instead of staying behind on the host."""
    guard = ["setpriv", "--pdeathsig", "KILL"]
    if os.geteuid() == 0:
        return [*guard, "unshare", "--mount", "--pid", "--kill-child", *argv]  # --kill-child implies --fork
    return [*guard, *argv]


async def _follow(proc: asyncio.subprocess.Process, recipe: PackRecipe, report: ProgressFn) -> list[str]:
    """Read the build's output to its end, reporting each new step; return its last lines."""
    assert proc.stdout is not None
    tail: list[str] = []
    last_step = -1
    while True:
        raw = await proc.stdout.readline()
        if not raw:
            return tail
        line = raw.decode("utf-8", "replace").rstrip()
        tail = [*tail[-19:], line]
        found = step_of(line)
        if found and found[0] > last_step:
            last_step = found[0]
            report(f"{recipe.label}: {found[1]} ({found[0] + 1}/{len(STEPS)})")


async def _stop(proc: asyncio.subprocess.Process) -> None:
    """Kill the build's whole process group and wait for it (its session is its own: ``start_new_session``)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    await proc.wait()


def _lock_path(packs_root: Path, recipe: PackRecipe) -> Path:
    return packs_root / f"{recipe.name}.lock"


def _progress_path(packs_root: Path, recipe: PackRecipe) -> Path:
    return packs_root / f"{recipe.name}.progress"


def _read_progress(packs_root: Path, recipe: PackRecipe) -> str | None:
    try:
        return _progress_path(packs_root, recipe).read_text()[:500].strip() or None
    except OSError:
        return None


def _write_progress(packs_root: Path, recipe: PackRecipe, text: str) -> None:
    """The builder's current step, replaced whole so a reader never sees half of one."""
    tmp = packs_root / f".{recipe.name}.progress-{os.getpid()}"
    tmp.write_text(text)
    os.replace(tmp, _progress_path(packs_root, recipe))


def _mkdir(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)


def _clear_stale(packs_root: Path, recipe: PackRecipe) -> Path:
    prefix = f".tmp-{recipe.name}-"
    for stale in packs_root.glob(f"{prefix}*"):
        # Only this recipe's own (a process id after the name): another pack's name may extend this one's.
        if stale.name.removeprefix(prefix).isdigit():
            shutil.rmtree(stale, ignore_errors=True)
    return packs_root / f".tmp-{recipe.name}-{os.getpid()}"


def _commit(tmp: Path, packs_root: Path, recipe: PackRecipe, sources: list[str], dates: dict[str, str]) -> None:
    marker = {
        "format": MARKER_FORMAT,
        "revision": recipe.revision,
        "release": RELEASE,
        "sources": sources,
        "engine": recipe.engine,
        "packages": list(recipe.packages),
        "base": BASE_REVISION,
        "rigUid": RIG_UID,
        "rigGid": RIG_GID,
        "builtAt": stamp(datetime.now(UTC)),
        "archiveDates": dates,  # suite -> the Date of its Release file when the build began
    }
    (tmp / MARKER).write_text(json.dumps(marker, indent=2))
    os.chmod(tmp, 0o755)
    versions.install(tmp, packs_root, recipe.name)  # the old version, if any, stays for the rigs booted from it


def read_marker(packs_root: Path, recipe: PackRecipe) -> dict[str, object] | None:
    """What the current version of a ready pack recorded when it was built, or None."""
    try:
        found = json.loads((pack_path(packs_root, recipe) / MARKER).read_text())
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None
