"""The full-VM desktop qcow2 for the tests: built by the repository's script logic (``desktopdisk``) into
``HANGAR_TEST_IMAGES`` (default ``~/.cache/hangar-test/images``) from a pack in the shared packs directory, once,
under their locks, and reused until what it is built from changes. The first build takes several minutes, so
``make test-packs`` builds it before the tests (``scripts/build-desktop-image`` does the same by hand)."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import AsyncIterator
from dataclasses import asdict
from pathlib import Path

import pytest

from hangar.rigs.backends.fullvm.imports import ImportedImage, images_dir
from hangar.rigs.images.desktopdisk import ensure_desktop_image, missing_tools
from tests.support.packs import PACKS

IMAGES = Path(os.environ.get("HANGAR_TEST_IMAGES") or PACKS.parent / "images")

# A test that boots full VMs under TCG waits for its turn (``tcg_turn``) and may wait for the others' boots first.
TCG_TEST_TIMEOUT_S = 2400

needs_qemu = pytest.mark.skipif(
    shutil.which("qemu-system-x86_64") is None or shutil.which("qemu-img") is None,
    reason="QEMU is not installed (make apt-deps)",
)


async def desktop_image() -> Path:
    missing = missing_tools()
    if missing:
        pytest.skip(f"the desktop image cannot be built here: {', '.join(missing)} (make apt-deps)")
    return await ensure_desktop_image(PACKS, IMAGES)


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def plant_image(rigs_root: Path, image_id: str, accelerator: str) -> None:
    """An image record as an import leaves it, over a blank qcow2, for tests that never boot it (refusals)."""
    root = images_dir(rigs_root)
    root.mkdir(parents=True, exist_ok=True)
    subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", str(root / f"{image_id}.qcow2"), "64M"], check=True)
    record = ImportedImage(image_id, "planted", "0" * 64, 1, 64 << 20, "2026-01-01T00:00:00Z", accelerator, 1.0)
    (root / f"{image_id}.json").write_text(json.dumps(asdict(record)))


@contextlib.asynccontextmanager
async def tcg_turn() -> AsyncIterator[None]:
    """One test's full VMs under TCG at a time across the suite's processes. TCG is one busy host thread per guest
    CPU: four guests booting at once on a 2-core machine each took over five minutes to answer (past the import's
    boot deadline), where one alone takes under a minute. The lock is a file beside the built images (flock: the
    workers are processes)."""
    IMAGES.mkdir(parents=True, exist_ok=True)
    fd = os.open(IMAGES / ".tcg-turn.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        await asyncio.to_thread(fcntl.flock, fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock
