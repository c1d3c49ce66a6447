"""Parsing workers, confined: a repository's files are hostile input to a C parser, so they are parsed in separate
processes that hold nothing worth taking and can reach nothing.

Each worker is ``python -I -m hangar.codegraph.worker`` started by bubblewrap (the sandbox of
``hangar.core.hosttool``, every host program fed hostile input runs in) in new user, PID, network, IPC, UTS
and mount namespaces, as an unprivileged uid, with no capabilities, seeing only the read-only system directories
and Python's own installation (never the data directory, a repository or a worktree: files reach it as bytes on
its stdin), under a memory limit, and dying with the server. Where bubblewrap is missing, parsing refuses
unless the server owner switched on trusted host execution (``hangar.core.confine``); then the workers run as
plain processes with the same protocol and bounds.

A file whose parse outlives ``timeout_s`` (the worker's own tree-sitter bound, then the server's, a second later)
is recorded as timed out and its worker is killed and replaced.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import resource
import shutil
import site
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import hangar
from hangar.core.hosttool import sandbox_argv
from hangar.core.procs import die_with_parent
from hangar.errors import Unavailable

WORKER_MEMORY = 1 << 30  # address space of one worker
_GRACE_S = 1.0  # past the worker's own parse bound, before the server kills it


class GrammarFailed(Exception):
    """A grammar did not resolve in the worker: the step fails (its message names the language)."""


def _read_only_roots() -> list[str]:
    """What a worker sees: the system's directories and Python's installation, the venv, and Hangar's source."""
    # Never ``sys.path`` as such: its first entry may be the directory the server was started in.
    roots = {"/usr", "/etc/alternatives", sys.base_prefix, sys.prefix, str(Path(hangar.__file__).parent.parent)}
    roots.update(site.getsitepackages())
    # A folder inside another is bound with it; binding it again would only add a mount.
    kept = sorted(r for r in roots if Path(r).exists())
    return [r for r in kept if not any(r != o and r.startswith(o.rstrip("/") + "/") for o in kept)]


def worker_argv(confined: bool) -> list[str]:
    python = [sys.executable, "-I", "-m", "hangar.codegraph.worker"]
    if not confined:
        return python
    if shutil.which("bwrap") is None:
        raise Unavailable("parsing a repository runs confined, and bubblewrap (bwrap) is not installed")
    # The sandbox every host program fed hostile input runs in; a worker lives on between files, so its deadline
    # is the pool's per-file bound, not the helper's.
    return sandbox_argv(python, mounts=[(Path(root), root) for root in _read_only_roots()], workdir="/")


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (WORKER_MEMORY, WORKER_MEMORY))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


class _Worker:
    def __init__(self, argv: list[str]) -> None:
        self._argv = argv
        self._proc: asyncio.subprocess.Process | None = None

    async def _started(self) -> asyncio.subprocess.Process:
        if self._proc is None or self._proc.returncode is not None:
            parent = die_with_parent()

            def prepare() -> None:
                parent()
                _limits()

            self._proc = await asyncio.create_subprocess_exec(
                *self._argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.DEVNULL,
                env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C.UTF-8"},
                preexec_fn=prepare,
                limit=64 << 20,
            )
        return self._proc

    async def parse(self, language: str, grammar: str, query: str, data: bytes, timeout_s: float) -> dict[str, Any]:
        proc = await self._started()
        assert proc.stdin is not None and proc.stdout is not None
        head = {"language": language, "grammar": grammar, "query": query, "timeoutMs": int(timeout_s * 1000)}
        try:
            proc.stdin.write(json.dumps(head).encode() + b"\n" + str(len(data)).encode() + b"\n" + data)
            await proc.stdin.drain()
            line = await asyncio.wait_for(proc.stdout.readline(), timeout_s + _GRACE_S)
        except asyncio.CancelledError:  # its answer would reach the next caller: a fresh worker serves it
            await self.aclose()
            raise
        except TimeoutError:
            await self.aclose()
            return {"error": "timeout", "message": f"parsing took longer than {timeout_s:g} s"}
        except (BrokenPipeError, ConnectionResetError, ValueError):
            line = b""
        if not line:
            code = await self.aclose()
            return {"error": "parse", "message": f"the parser stopped (exit {code})"}
        answer: dict[str, Any] = json.loads(line)
        return answer

    async def aclose(self) -> int | None:
        proc, self._proc = self._proc, None
        if proc is None:
            return None
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
        return await proc.wait()


class ParserPool:
    """``size`` confined workers; ``parse`` hands a file to a free one."""

    def __init__(self, size: int, confined: bool, argv: Callable[[bool], list[str]] = worker_argv) -> None:
        self._argv = argv(confined)
        self._free: asyncio.Queue[_Worker] = asyncio.Queue()
        self._all = [_Worker(self._argv) for _ in range(max(1, size))]
        for w in self._all:
            self._free.put_nowait(w)

    async def parse(self, language: str, grammar: str, query: str, data: bytes, timeout_s: float) -> dict[str, Any]:
        worker = await self._free.get()
        try:
            answer = await worker.parse(language, grammar, query, data, timeout_s)
        finally:
            self._free.put_nowait(worker)
        if answer.get("error") == "grammar":
            raise GrammarFailed(f"the {language} grammar failed to resolve: {answer.get('message')}")
        return answer

    async def aclose(self) -> None:
        for w in self._all:
            await w.aclose()
