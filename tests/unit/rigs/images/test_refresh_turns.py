"""Stale packs are built again one at a time: when the archive publishes, every pack is stale at once, and their
rebuilds take turns rather than all of a small host's cores. The rebuild itself is replaced by one that records
how many ran at once (the real build is covered by tests/integration/test_rigs_pack_refresh.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from hangar.rigs.backends.enclosure import backend as enclosure_backend
from hangar.rigs.backends.enclosure.backend import EnclosureBackend
from hangar.rigs.images import recipes, refresh


async def test_stale_packs_are_rebuilt_one_after_another_and_each_is_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    running: list[str] = []
    most = 0
    order: list[str] = []

    async def rebuild(_packs: Path, recipe: Any, *_rest: Any) -> float:
        nonlocal most
        running.append(recipe.name)
        most = max(most, len(running))
        await asyncio.sleep(0.05)  # long enough for every other rebuild to have started, were they not held
        running.remove(recipe.name)
        order.append(recipe.name)
        return 0.05

    monkeypatch.setattr(enclosure_backend, "rebuild_pack", rebuild)
    backend = EnclosureBackend(tmp_path / "rigs", packs_root=tmp_path / "packs")
    (tmp_path / "packs").mkdir()
    stale = recipes.ALL[:3]
    checked = refresh.Record("refreshing", refresh.now(), None, None, ("bookworm-security",))
    builds = [backend._refresher(recipe, {}, checked) for recipe in stale]
    await asyncio.gather(*(build(lambda _step: None) for build in builds))
    assert most == 1
    assert sorted(order) == sorted(r.name for r in stale)
    for recipe in stale:
        record = refresh.read_record(tmp_path / "packs", recipe)
        assert record is not None and record.state == "refreshed"
