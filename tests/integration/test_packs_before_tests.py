"""The suite's pack step (tests/support/packs.py) as a run of pytest alone meets it on a machine without packs: the
packs the selected tests declare are built before the first test, with the build's progress, so no test waits for
one within its own time limit; a failed build fails the tests that declared it at once, saying why, and the others
run. ``mmdebstrap`` is a stand-in (tests/support/fake_mmdebstrap.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.fake_mmdebstrap import FakeMmdebstrap, install_fake_mmdebstrap
from tests.support.packs import rigs_unavailable

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = """
import os
from pathlib import Path

import pytest


@pytest.mark.packs("terminal")
def test_needs_the_terminal_pack():
    assert (Path(os.environ["HANGAR_TEST_PACKS"]) / "terminal-tools-v1-base-v2" / ".hangar-pack.json").is_file()


def test_needs_none():
    pass
"""


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeMmdebstrap:
    if (reason := rigs_unavailable()) is not None:
        pytest.skip(f"packs are built only where rigs run, and they cannot here: {reason}")
    return install_fake_mmdebstrap(tmp_path, monkeypatch)


def pytest_alone(tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """pytest on a sample of two tests, one declaring the terminal pack, with an empty packs directory."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "pytest.ini").write_text("[pytest]\nmarkers =\n    packs(*names): rig image packs the test needs\n")
    (run / "test_sample.py").write_text(SAMPLE)
    env = {**os.environ, "HANGAR_TEST_PACKS": str(tmp_path / "packs"), "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "tests.support.packs", "-p", "no:cacheprovider", "test_sample.py"],
        cwd=run, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def test_the_packs_tests_declare_are_built_before_the_first_test(tmp_path: Path, fake: FakeMmdebstrap) -> None:
    fake.finish()
    done = pytest_alone(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    packs = tmp_path / "packs"
    lines = done.stdout.splitlines()
    step = lines.index(f"building rig packs the selected tests need into {packs}: terminal-tools-v1-base-v2")
    assert lines[step + 1].startswith(f"terminal-tools-v1-base-v2 built at {packs / 'terminal-tools-v1-base-v2'} in ")
    assert "terminal image: downloading packages (4/10)" in done.stderr.splitlines()  # its progress, as it goes
    assert lines[-1].startswith("2 passed")


def test_a_failed_build_fails_the_tests_that_need_it_at_once_saying_why(tmp_path: Path, fake: FakeMmdebstrap) -> None:
    fake.finish(exit_code=2)
    done = pytest_alone(tmp_path)
    assert done.returncode == 1
    assert "error: terminal-tools-v1-base-v2: mmdebstrap failed with exit code 2: " in done.stderr
    assert (
        "the terminal image was not built before the tests (`hangar rigs build-pack terminal-tools-v1-base-v2` "
        "exited with 1; its error is printed above the test results)"
    ) in done.stdout
    assert "ERROR test_sample.py::test_needs_the_terminal_pack" in done.stdout  # at its setup, without waiting
    assert done.stdout.splitlines()[-1].startswith("1 passed, 1 error")
