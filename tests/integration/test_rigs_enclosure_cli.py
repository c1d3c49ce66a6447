"""``hangar rigs check`` and ``hangar rigs build-pack`` through the real command line."""

from __future__ import annotations

import asyncio
from pathlib import Path

from typer.testing import CliRunner

from hangar.cli import app
from hangar.rigs.image.pack import ensure_pack
from hangar.rigs.image.recipes import BROWSERS
from tests.integration.rigs_enclosure_env import PACKS, ready_pack


def test_build_pack_reuses_a_ready_pack_and_check_reports(tmp_path: Path) -> None:
    pack = asyncio.run(ready_pack())  # the CLI runs its own event loop, so this test has none
    packs = tmp_path / "data" / "rigs" / "microvm-packs"
    packs.mkdir(parents=True)
    (packs / pack.name).symlink_to(pack)  # the pack this machine already built, seen from a fresh data dir
    runner = CliRunner()
    result = runner.invoke(app, ["rigs", "build-pack", "--data-dir", str(tmp_path / "data")])
    assert result.exit_code == 0, result.output
    assert f"terminal-tools-v1-base-v2 already built at {packs / pack.name}" in result.output
    assert PACKS.exists()
    result = runner.invoke(app, ["rigs", "check", "--data-dir", str(tmp_path / "data")])
    assert (result.exit_code, result.output) == (0, "enclosure rigs can run on this host\n")


def test_build_pack_names_a_browser_pack_and_refuses_an_unknown_one(tmp_path: Path) -> None:
    packs = tmp_path / "data" / "rigs" / "microvm-packs"
    packs.mkdir(parents=True)
    recipe = BROWSERS["engine-a"]
    asyncio.run(ready_pack())  # skips where enclosures cannot run
    built = asyncio.run(ensure_pack(PACKS, None, recipe)).path  # shared with the browser rig tests
    (packs / recipe.name).symlink_to(built)
    runner = CliRunner()
    result = runner.invoke(app, ["rigs", "build-pack", recipe.name, "--data-dir", str(tmp_path / "data")])
    assert result.exit_code == 0, result.output
    assert f"{recipe.name} already built at {packs / recipe.name}" in result.output
    result = runner.invoke(app, ["rigs", "build-pack", "browser-engine-z", "--data-dir", str(tmp_path / "data")])
    assert result.exit_code == 2
    assert "no pack 'browser-engine-z'" in result.output and "terminal-tools-v1-base-v2" in result.output
