"""The built web client (``web/dist``) for browser tests: built here when missing or older than its sources, as
``make test`` builds it first; node and npm come from the host (the Makefile installs Debian's where missing)."""

from __future__ import annotations

import shutil
import subprocess
import threading
from pathlib import Path

WEB = Path(__file__).resolve().parents[2] / "web"
DIST = WEB / "dist"
_lock = threading.Lock()


def _newest_source() -> float:
    sources = [WEB / "index.html", WEB / "package-lock.json", WEB / "vite.config.ts"]
    sources += [p for p in (WEB / "src").rglob("*") if p.is_file()]
    return max(p.stat().st_mtime for p in sources)


def built_web_client() -> Path:
    """``web/dist``, built first when it is missing or stale."""
    with _lock:
        index = DIST / "index.html"
        if index.exists() and index.stat().st_mtime >= _newest_source():
            return DIST
        for tool in ("node", "npm"):
            if shutil.which(tool) is None:
                raise RuntimeError(f"{tool} is not installed (the Makefile installs Debian's nodejs and npm)")
        if not (WEB / "node_modules" / ".package-lock.json").exists():
            npm_ci = ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"]
            subprocess.run(npm_ci, cwd=WEB, check=True, timeout=600)
        subprocess.run(["npm", "run", "--silent", "build"], cwd=WEB, check=True, timeout=600)
        return DIST


def axe_source() -> str:
    """axe-core from the client's own dev dependencies (no CDN), injected into pages by the tests."""
    built_web_client()  # the same npm install brings it
    return (WEB / "node_modules" / "axe-core" / "axe.min.js").read_text(encoding="utf-8")
