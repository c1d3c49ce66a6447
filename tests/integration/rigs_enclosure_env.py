"""Real enclosure rigs for the enclosure tests: the machine's image packs (``tests/support/packs.py``), one rig
per test.

The packs live under a stable cache path (``HANGAR_TEST_PACKS``, default ``~/.cache/hangar-test/packs``) so they
are built once per machine, before the tests, and reused by every later run; each test gets its own rigs
directory. Where this host cannot run enclosures, tests skip with the backend's own reason.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import AsyncIterator, Mapping
from pathlib import Path

import pytest

from hangar.rigs.backends.base import GuestTree, RigSpec
from hangar.rigs.backends.enclosure import EnclosureBackend, EnclosureRig
from hangar.rigs.images.builder import ensure_pack
from tests.support.packs import PACKS, recipe_for, rigs_unavailable


async def ready_pack(key: str = "terminal") -> Path:
    """The pack ``key`` names (``terminal`` or a browser engine), ready: built before the tests, or waited for
    while a build under way elsewhere finishes (``ensure_pack`` follows it), never a fixed time."""
    reason = rigs_unavailable()
    if reason is not None:
        pytest.skip(f"enclosures cannot run here: {reason}")
    return (await ensure_pack(PACKS, None, recipe_for(key))).path


def spec(
    rig_id: str = "t1",
    *,
    allow: frozenset[str] = frozenset(),
    memory_mb: int = 512,
    home: Path | None = None,
    worktree: Path | None = None,
) -> RigSpec:
    return RigSpec(rig_id, "ws1", "terminal", memory_mb, 2, allow, home, GuestTree(worktree) if worktree else None)


@contextlib.asynccontextmanager
async def enclosure(
    overrides: Mapping[str, tuple[str, int]] | None = None,
) -> AsyncIterator[EnclosureBackend]:
    await ready_pack()
    with tempfile.TemporaryDirectory(prefix="hre-") as root:
        yield EnclosureBackend(Path(root) / "rigs", packs_root=PACKS, upstream_overrides=overrides)


@contextlib.asynccontextmanager
async def running_rig(
    rig_spec: RigSpec | None = None, overrides: Mapping[str, tuple[str, int]] | None = None
) -> AsyncIterator[EnclosureRig]:
    async with enclosure(overrides) as backend:
        rig = await backend.start(rig_spec or spec(), lambda _text: None)
        assert isinstance(rig, EnclosureRig)
        try:
            yield rig
        finally:
            await rig.aclose()
