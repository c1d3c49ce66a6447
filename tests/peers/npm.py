"""npm packages the tests run as real peers, each pinned by its folder's lock file and installed on first use."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.support.build_lock import build_lock


def ensure_installed(peer_dir: Path, installed: Path) -> None:
    """``npm ci`` in ``peer_dir`` unless ``installed`` (a file or folder the packages bring) is there; a clear
    error when node or npm is missing."""
    for tool in ("node", "npm"):
        if shutil.which(tool) is None:
            raise RuntimeError(f"{tool} is not installed (the Makefile's APT_PACKAGES lists nodejs and npm)")
    with build_lock(peer_dir):  # another worker may be installing it
        if installed.exists():
            return
        subprocess.run(
            ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=peer_dir, check=True, timeout=300
        )
