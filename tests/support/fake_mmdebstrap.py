"""A stand-in ``mmdebstrap`` on ``PATH`` for tests of pack builds: a real building takes minutes and the
network, while what these tests check is what the server makes of a build's steps, its end and its failure.

The script prints mmdebstrap's own step lines, then waits until the test creates ``release`` (so a test sees
the build under way for as long as it needs), then makes the target directory and exits with ``exit_code``.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

_SCRIPT = """#!{python}
import pathlib, sys, time
print("I: chosen mode: unshare", flush=True)
print("I: running apt-get update...", flush=True)
print("I: downloading packages...", flush=True)
release = pathlib.Path({release!r})
while not release.exists():
    time.sleep(0.05)
code = int(release.read_text() or "0")
if code:
    print("E: the mirror answered 404", flush=True)
    sys.exit(code)
target = pathlib.Path(sys.argv[sys.argv.index("bookworm") + 1])  # then the sources
target.mkdir(parents=True)
(target / "bin").mkdir()
print("I: success in 0.1 seconds", flush=True)
"""


@dataclass
class FakeMmdebstrap:
    release_file: Path

    def finish(self, exit_code: int = 0) -> None:
        """Let the build under way end, successfully or with ``exit_code``."""
        self.release_file.write_text(str(exit_code))


def install_fake_mmdebstrap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeMmdebstrap:
    """Put the fake first on ``PATH`` (for this process and the builds it spawns)."""
    bin_dir = tmp_path / "fake-bin"
    bin_dir.mkdir()
    release = tmp_path / "fake-mmdebstrap-release"
    script = bin_dir / "mmdebstrap"
    script.write_text(_SCRIPT.format(python=sys.executable, release=str(release)))
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    return FakeMmdebstrap(release)
