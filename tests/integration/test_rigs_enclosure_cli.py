"""``hangar rigs check`` and ``hangar rigs build-pack`` through the real command line: both look for packs where
the server does (``HANGAR_RIG_PACKS_DIR``, else the data directory's), a build says how far it has got, and a
failed one says why and builds when run again. ``mmdebstrap`` is a stand-in (tests/support/fake_mmdebstrap.py)
except where a test reuses this machine's real packs."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from hangar.rigs.backends.enclosure.probe import HOST_TOOLS
from hangar.rigs.images.builder import MARKER
from hangar.rigs.images.recipes import ALL, BROWSERS
from tests.integration.rigs_enclosure_env import ready_pack
from tests.support.fake_mmdebstrap import install_fake_mmdebstrap
from tests.support.processes import HANGAR

TERMINAL = "terminal-tools-v1-base-v2"


def rigs_cli(*args: str, packs: Path | None, path: str | None = None) -> subprocess.CompletedProcess[str]:
    """``hangar rigs <args>``; ``packs`` is ``HANGAR_RIG_PACKS_DIR`` (None: unset), ``path`` replaces ``PATH``."""
    env = {k: v for k, v in os.environ.items() if k != "HANGAR_RIG_PACKS_DIR"}
    if packs is not None:
        env["HANGAR_RIG_PACKS_DIR"] = str(packs)
    if path is not None:
        env["PATH"] = path
    return subprocess.run([HANGAR, "rigs", *args], env=env, capture_output=True, text=True, timeout=300)


def test_build_pack_builds_where_hangar_rig_packs_dir_says(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The server boots from ``HANGAR_RIG_PACKS_DIR``; a pack built ahead of time must land there, not in the
    data directory where no server looks."""
    fake = install_fake_mmdebstrap(tmp_path, monkeypatch)
    fake.finish()
    data, packs = tmp_path / "data", tmp_path / "shared-packs"
    built = rigs_cli("build-pack", "--data-dir", str(data), packs=packs)
    assert built.returncode == 0, built.stderr
    assert (packs / TERMINAL / MARKER).is_file()
    assert not (data / "rigs" / "microvm-packs").exists()
    assert built.stdout.startswith(f"{TERMINAL} built at {packs / TERMINAL} in ")
    # Not on a terminal (a log, make's output in CI): one line per step.
    assert "terminal image: downloading packages (4/10)" in built.stderr.splitlines()
    again = rigs_cli("build-pack", "--data-dir", str(data), packs=packs)
    assert (again.returncode, again.stdout) == (0, f"{TERMINAL} already built at {packs / TERMINAL}\n")
    # Without the variable, the data directory's own packs.
    own = rigs_cli("build-pack", "--data-dir", str(data), packs=None)
    assert own.returncode == 0 and (data / "rigs" / "microvm-packs" / TERMINAL / MARKER).is_file()


@pytest.mark.packs("terminal")
def test_check_looks_for_the_pack_where_hangar_rig_packs_dir_says(tmp_path: Path) -> None:
    """Without mmdebstrap, a host can run rigs only when its terminal pack is built: where the server looks."""
    pack = asyncio.run(ready_pack())  # skips where enclosures cannot run; the CLI runs its own event loop
    tools = tmp_path / "bin"  # every host tool the enclosure needs, and no mmdebstrap
    tools.mkdir()
    for tool in [*HOST_TOOLS, "setpriv"]:
        found = shutil.which(tool)
        assert found is not None
        (tools / tool).symlink_to(found)
    packs = tmp_path / "packs"
    packs.mkdir()
    without = rigs_cli("check", "--data-dir", str(tmp_path / "data"), packs=packs, path=str(tools))
    assert without.returncode == 1
    assert without.stdout == (
        "enclosure rigs cannot run here: the terminal image is not built yet and building it needs mmdebstrap "
        "(Debian package mmdebstrap)\n"
    )
    (packs / TERMINAL).symlink_to(pack)
    built = rigs_cli("check", "--data-dir", str(tmp_path / "data"), packs=packs, path=str(tools))
    assert (built.returncode, built.stdout) == (0, "enclosure rigs can run on this host\n")


def test_build_pack_builds_several_or_all_and_refuses_an_unknown_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = install_fake_mmdebstrap(tmp_path, monkeypatch)
    fake.finish()
    packs = tmp_path / "packs"
    browser_a = BROWSERS["engine-a"].name
    two = rigs_cli("build-pack", TERMINAL, browser_a, packs=packs)
    assert two.returncode == 0, two.stderr
    assert [line.split(" built at ")[0] for line in two.stdout.splitlines()] == [TERMINAL, browser_a]
    every = rigs_cli("build-pack", "--all", packs=packs)
    assert every.returncode == 0, every.stderr
    lines = every.stdout.splitlines()
    assert lines[:2] == [f"{name} already built at {packs / name}" for name in (TERMINAL, browser_a)]
    assert [line.split(" built at ")[0] for line in lines[2:]] == [r.name for r in ALL[2:]]
    assert all((packs / r.name / MARKER).is_file() for r in ALL)
    unknown = rigs_cli("build-pack", TERMINAL, "browser-engine-z", packs=packs)
    assert unknown.returncode == 2 and unknown.stdout == ""
    assert "no pack 'browser-engine-z'" in unknown.stderr and TERMINAL in unknown.stderr


def test_a_failed_build_says_why_and_builds_when_run_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = install_fake_mmdebstrap(tmp_path, monkeypatch)
    fake.finish(exit_code=2)
    packs = tmp_path / "packs"
    failed = rigs_cli("build-pack", packs=packs)
    assert failed.returncode == 1
    (error,) = [line for line in failed.stderr.splitlines() if line.startswith("error:")]
    assert error.startswith(f"error: {TERMINAL}: mmdebstrap failed with exit code 2: ")
    assert "the mirror answered 404" in error and error.endswith("; run the command again to retry")
    assert not (packs / TERMINAL).exists() and not list(packs.glob(".tmp-*"))
    fake.finish()
    retried = rigs_cli("build-pack", packs=packs)
    assert retried.returncode == 0 and (packs / TERMINAL / MARKER).is_file()
