"""A rig's log: what its bubblewrap and agent print reaches the host through a pipe, kept in ``enclosure.log`` up
to ``LOG_LIMIT`` bytes and read to the end beyond it, so the rig never blocks on a full pipe."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from hangar.rigs.backends.base import RigSpec
from hangar.rigs.backends.enclosure.rig import LOG_LIMIT, EnclosureRig


@pytest.mark.parametrize("size", [LOG_LIMIT, LOG_LIMIT + 1, 3 * LOG_LIMIT])
async def test_the_log_keeps_up_to_its_limit_and_reads_the_rest(tmp_path: Path, size: int) -> None:
    rig = EnclosureRig(RigSpec("r1", "ws", "terminal", 512, 1, frozenset(), None, None), tmp_path, "v1")
    rig.run_dir.mkdir(parents=True)
    output = asyncio.StreamReader()
    output.feed_data(b"x" * size)
    output.feed_eof()
    await rig._keep_log(output)
    assert (rig.run_dir / "enclosure.log").stat().st_size == min(size, LOG_LIMIT)
    assert output.at_eof()
