"""Headless Chromium (Debian's package) for browser tests, driven over the DevTools protocol.

Chromium forks helpers (zygote, GPU, crash handler) that keep writing into the profile directory for a moment after
the browser process is gone, so the whole process group is killed and reaped before anyone removes the profile."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import shutil
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import websockets

CHROMIUM = shutil.which("chromium")
BASE_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-port=0",
)


@contextlib.asynccontextmanager
async def headless_chromium(profile: Path, url: str = "about:blank", *flags: str) -> AsyncIterator[str]:
    """Start Chromium on ``url`` with its own profile directory and yield the DevTools ``host:port``."""
    assert CHROMIUM is not None, "chromium is not installed (Makefile APT_PACKAGES)"
    proc = await asyncio.create_subprocess_exec(
        CHROMIUM,
        *BASE_FLAGS,
        *flags,
        f"--user-data-dir={profile}",
        url,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    try:
        assert proc.stderr is not None
        endpoint = ""
        while not endpoint:
            line = (await asyncio.wait_for(proc.stderr.readline(), 30)).decode()
            if not line:
                raise RuntimeError("chromium exited before opening DevTools")
            if "DevTools listening on ws://" in line:
                endpoint = line.split("ws://", 1)[1].split("/", 1)[0]
        yield endpoint
    finally:
        await _kill_group(proc.pid)
        await proc.wait()


async def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)
    # Helpers that are not our children are reaped by init; wait until the group is empty.
    for _ in range(200):
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        await asyncio.sleep(0.025)


class Page:
    """One tab of a running headless Chromium, driven over the DevTools protocol (``Runtime.evaluate`` runs in
    the page as DevTools does, so a page's own content security policy does not stop the test's scripts)."""

    def __init__(self, cdp: websockets.ClientConnection) -> None:
        self._cdp = cdp
        self._ids = itertools.count(1)

    async def _call(self, method: str, **params: Any) -> dict[str, Any]:
        call_id = next(self._ids)
        await self._cdp.send(json.dumps({"id": call_id, "method": method, "params": params}))
        while True:
            reply = json.loads(await asyncio.wait_for(self._cdp.recv(), 30))
            if reply.get("id") == call_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                result: dict[str, Any] = reply.get("result", {})
                return result

    async def evaluate(self, expression: str) -> Any:
        """The value of ``expression`` in the page (promises awaited); a script error fails the test."""
        result = await self._call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"script failed: {result['exceptionDetails'].get('text')} in {expression[:200]}")
        return result["result"].get("value")

    async def navigate(self, url: str) -> None:
        await self._call("Page.navigate", url=url)

    async def wait_for(self, expression: str, timeout: float = 30) -> Any:
        """Poll ``expression`` until it is truthy (across navigations) and return its value."""
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            try:
                value = await self.evaluate(expression)
            except RuntimeError:  # the page was navigating away
                value = None
            if value:
                return value
            if asyncio.get_running_loop().time() > deadline:
                location = await self.evaluate("location.href")
                raise AssertionError(f"waited {timeout} s for {expression!r}; the page is at {location}")
            await asyncio.sleep(0.05)

    async def submit(self, form: str, fields: dict[str, str] | None = None, button: str | None = None) -> None:
        """Fill the named fields of the form ``form`` (a CSS selector; radios are checked by value) and submit
        it as a person would, through ``button`` when given (its name and value go with the form)."""
        script = (
            "(function(sel, fields, button){var f=document.querySelector(sel);"
            "if(!f) throw new Error('no form '+sel);"
            "for (var name in fields){var els=f.querySelectorAll('[name=\"'+name+'\"]');"
            "if(!els.length) throw new Error('no field '+name);"
            "els.forEach(function(el){if(el.type==='radio'||el.type==='checkbox'){el.checked=(el.value===fields[name]);}"
            "else{el.value=fields[name];}});}"
            "var b=button?f.querySelector(button):null; if(button&&!b) throw new Error('no button '+button);"
            "f.requestSubmit(b||undefined); return true;})"
            f"({json.dumps(form)}, {json.dumps(fields or {})}, {json.dumps(button)})"
        )
        await self.evaluate(script)


@contextlib.asynccontextmanager
async def browser_page(profile: Path, *flags: str) -> AsyncIterator[Page]:
    """A headless Chromium with one blank tab to drive."""
    async with headless_chromium(profile, "about:blank", *flags) as endpoint:
        async with httpx.AsyncClient(base_url=f"http://{endpoint}") as devtools:
            tab = None
            for _ in range(600):
                targets = (await devtools.get("/json/list")).json()
                tab = next((t for t in targets if t.get("type") == "page"), None)
                if tab is not None:
                    break
                await asyncio.sleep(0.05)
            assert tab is not None, "chromium opened no tab"
        async with websockets.connect(tab["webSocketDebuggerUrl"], max_size=None) as cdp:
            yield Page(cdp)
