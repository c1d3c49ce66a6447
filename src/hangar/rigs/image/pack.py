"""The terminal image: a Debian root filesystem built once with mmdebstrap and kept as a pre-extracted pack.

The pack lives at ``<packs_root>/terminal-tools-v1/`` (``packs_root`` is ``<dataDir>/rigs/microvm-packs``),
keyed by the toolset revision ``tools-v1``: change ``PACKAGES`` and the revision moves, so old packs are never
reused for a different toolset. Rigs mount it read-only as the lower layer of their root filesystem.

Building takes a minute or more, so it happens once: a file lock makes concurrent first opens (threads, tasks
or processes) wait for a single build, and the build happens in a temporary sibling directory that is renamed
into place only when complete (a ``.hangar-pack.json`` marker inside says so). A crashed build leaves only a
temporary directory, removed by the next build.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from hangar.errors import Internal, Unavailable
from hangar.rigs.image.mirror import debian_mirror

TOOLSET_REVISION = "tools-v1"
PACK_NAME = "terminal-tools-v1"
RELEASE = "bookworm"
MARKER = ".hangar-pack.json"
RIG_USER = "rig"
RIG_UID = 1000

# The CLI baseline of a hosted CI runner, from Debian packages; no container runtimes or language toolcaches.
PACKAGES: tuple[str, ...] = (
    "bash", "ca-certificates", "curl", "wget", "git", "openssh-client", "build-essential", "pkg-config",
    "python3", "python3-venv", "python3-pip", "jq", "rsync", "socat", "zip", "unzip", "xz-utils", "bzip2",
    "zstd", "gzip", "tar", "p7zip-full", "procps", "iproute2", "less", "file", "patch", "make", "nano",
    "vim-tiny", "sqlite3", "tree", "netcat-openbsd", "dnsutils", "locales", "tzdata",
)  # fmt: skip

# mmdebstrap's own step lines, in order, mapped to what a person reads in the progress bar.
STEPS: tuple[tuple[str, str], ...] = (
    ("chosen mode", "preparing"),
    ("setting up", "preparing"),
    ("running apt-get update", "fetching package lists"),
    ("downloading packages", "downloading packages"),
    ("extracting archives", "extracting base system"),
    ("installing essential", "installing base system"),
    ("installing remaining", "installing the CLI toolset"),
    ("running --customize-hook", "creating the rig user"),
    ("cleaning", "cleaning up"),
    ("success", "done"),
)


@dataclass(frozen=True)
class PackInfo:
    path: Path
    revision: str
    built_in_s: float | None  # None when the pack already existed


ProgressFn = Callable[[str], None]


def pack_path(packs_root: Path) -> Path:
    return packs_root / PACK_NAME


def pack_ready(packs_root: Path) -> bool:
    marker = pack_path(packs_root) / MARKER
    try:
        return bool(json.loads(marker.read_text())["revision"] == TOOLSET_REVISION)
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
    return [tool for tool in ("mmdebstrap",) if shutil.which(tool) is None]


async def ensure_pack(packs_root: Path, progress: ProgressFn | None = None) -> PackInfo:
    """Return the ready pack, building it first if needed (once, whoever asks concurrently)."""
    report = progress or (lambda _text: None)
    if pack_ready(packs_root):
        return PackInfo(pack_path(packs_root), TOOLSET_REVISION, None)
    _mkdir(packs_root)
    lock_fd = os.open(packs_root / f"{PACK_NAME}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        report("waiting for the terminal image build lock")
        await asyncio.to_thread(fcntl.flock, lock_fd, fcntl.LOCK_EX)
        if pack_ready(packs_root):  # someone else built it while we waited
            return PackInfo(pack_path(packs_root), TOOLSET_REVISION, None)
        started = time.monotonic()
        await _build(packs_root, report)
        return PackInfo(pack_path(packs_root), TOOLSET_REVISION, time.monotonic() - started)
    finally:
        os.close(lock_fd)  # closing releases the lock


async def _build(packs_root: Path, report: ProgressFn) -> None:
    missing = missing_tools()
    if missing:
        raise Unavailable(f"building the terminal image needs {', '.join(missing)} (Debian package mmdebstrap)")
    mirror = debian_mirror(RELEASE)
    tmp = _clear_stale(packs_root)
    report(f"building the terminal image ({TOOLSET_REVISION}) from {mirror}")
    argv = [
        "mmdebstrap",
        "--variant=apt",
        f"--mode={'root' if os.geteuid() == 0 else 'unshare'}",
        f"--include={','.join(PACKAGES)}",
        # The rig user owns its home; uid 1000 is the uid rigs run as.
        f'--customize-hook=chroot "$1" useradd --create-home --uid {RIG_UID} --user-group --shell /bin/bash {RIG_USER}',
        '--customize-hook=echo "C.UTF-8 UTF-8" > "$1/etc/locale.gen"',
        '--customize-hook=rm -f "$1/etc/resolv.conf" "$1/etc/hostname"; touch "$1/etc/resolv.conf"',
        RELEASE,
        str(tmp),
        mirror,
    ]
    proc = await asyncio.create_subprocess_exec(*argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    assert proc.stdout is not None
    tail: list[str] = []
    last_step = -1
    while True:
        raw = await proc.stdout.readline()
        if not raw:
            break
        line = raw.decode("utf-8", "replace").rstrip()
        tail = [*tail[-19:], line]
        found = step_of(line)
        if found and found[0] > last_step:
            last_step = found[0]
            report(f"terminal image: {found[1]} ({found[0] + 1}/{len(STEPS)})")
    code = await proc.wait()
    if code != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise Internal(f"mmdebstrap failed with exit code {code}: " + " | ".join(tail[-5:]))
    _commit(tmp, pack_path(packs_root), mirror)
    report("terminal image ready")


def _mkdir(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)


def _clear_stale(packs_root: Path) -> Path:
    for stale in packs_root.glob(f".tmp-{PACK_NAME}-*"):
        shutil.rmtree(stale, ignore_errors=True)
    return packs_root / f".tmp-{PACK_NAME}-{os.getpid()}"


def _commit(tmp: Path, final: Path, mirror: str) -> None:
    marker = {"revision": TOOLSET_REVISION, "release": RELEASE, "mirror": mirror, "packages": list(PACKAGES)}
    (tmp / MARKER).write_text(json.dumps(marker, indent=2))
    os.chmod(tmp, 0o755)
    if final.exists():  # an incomplete or outdated pack: replace it whole
        shutil.rmtree(final)
    os.rename(tmp, final)
