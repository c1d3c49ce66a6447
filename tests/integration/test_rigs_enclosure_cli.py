"""``hangar rigs check`` and ``hangar rigs build-pack`` through the real command line."""

from __future__ import annotations

import asyncio
from pathlib import Path

from typer.testing import CliRunner

from hangar.cli import app
from tests.integration.rigs_enclosure_env import PACKS, ready_pack


def test_build_pack_reuses_a_ready_pack_and_check_reports(tmp_path: Path) -> None:
    pack = asyncio.run(ready_pack())  # the CLI runs its own event loop, so this test has none
    packs = tmp_path / "data" / "rigs" / "microvm-packs"
    packs.mkdir(parents=True)
    (packs / pack.name).symlink_to(pack)  # the pack this machine already built, seen from a fresh data dir
    runner = CliRunner()
    result = runner.invoke(app, ["rigs", "build-pack", "--data-dir", str(tmp_path / "data")])
    assert result.exit_code == 0, result.output
    assert f"terminal-tools-v1 already built at {packs / pack.name}" in result.output
    assert PACKS.exists()
    result = runner.invoke(app, ["rigs", "check", "--data-dir", str(tmp_path / "data")])
    assert (result.exit_code, result.output) == (0, "enclosure rigs can run on this host\n")
