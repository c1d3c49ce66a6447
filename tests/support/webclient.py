"""The built web client (``web/dist``) for browser tests: built here when missing or older than its sources, as
``make test`` builds it first; node and npm come from the host (the Makefile installs Debian's where missing)."""

from __future__ import annotations

import shutil
import subprocess
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

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


async def axe_violations(page: Any) -> list[str]:
    """Serious and critical axe violations of the page as it is now."""
    await page.evaluate(axe_source() + "\n;0")
    result = await page.evaluate("axe.run(document, {resultTypes: ['violations']})")
    return [
        f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes']]}"
        for v in result["violations"]
        if v["impact"] in ("serious", "critical")
    ]


class Console:
    """Every console error and uncaught exception of a page (a CSP violation is one)."""

    def __init__(self, page: Any) -> None:
        self.errors: list[str] = []
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(f"uncaught: {e}"))


@asynccontextmanager
async def chromium() -> AsyncIterator[Any]:
    """Debian's Chromium under Playwright (never a downloaded browser)."""
    from playwright.async_api import async_playwright

    from tests.support.chromium import CHROMIUM

    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        try:
            yield browser
        finally:
            await browser.close()
