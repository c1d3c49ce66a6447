"""The static analysers a skill's bundled scripts are checked with, run confined: bandit for Python, shellcheck for
shell. The files they read are hostile (whoever published the skill wrote them to hurt the reader), so each
analyser runs in a bubblewrap sandbox of its own: no network, no IPC, its own PID namespace, an unprivileged uid
in a user namespace, the host's ``/usr`` and the server's Python read-only, the skill's files read-only, a fresh
``/tmp``, a minimal environment, memory and CPU limits, and a time bound after which its whole process group is
killed. What it prints is read up to ``MAX_OUTPUT`` bytes.

A skill's files cannot switch a check off: bandit ignores ``# nosec`` (``--ignore-nosec``) and reads no config from
the skill; shellcheck reads no ``.shellcheckrc`` (``--norc``) and is given the scripts with their directive comments
neutered (``neuter_directives``).

An analyser that cannot run here (bubblewrap, bandit or shellcheck missing) or fails is itself a ``review``
finding: a skill is never passed on a check that did not happen.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import resource
import shutil
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hangar.agents.skills.checks import BLOCK, REVIEW, Finding

ANALYSER_TIME_S = 60.0  # each analyser's run over one skill
MAX_OUTPUT = 4 * 1024 * 1024
MEMORY_BYTES = 1024 * 1024 * 1024  # address space of an analyser
GUEST = "/skill"
NOBODY = 65534


@dataclass(frozen=True)
class Ran:
    exit_code: int | None  # None: it did not finish within its time bound
    stdout: bytes
    stderr: bytes


def _limits() -> None:  # in the child, before bubblewrap starts
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))
    cpu = int(ANALYSER_TIME_S) + 5
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _python_mounts() -> list[str]:
    """The server's Python (a virtual environment, its base installation) where it lies outside ``/usr``."""
    out: list[str] = []
    for prefix in dict.fromkeys((sys.prefix, sys.base_prefix, os.path.realpath(sys.prefix))):
        if not prefix.startswith("/usr"):
            out += ["--ro-bind", prefix, prefix]
    return out


def sandbox_argv(tree: Path, argv: list[str]) -> list[str]:
    return [
        "bwrap", "--unshare-all", "--unshare-user", "--uid", str(NOBODY), "--gid", str(NOBODY),
        "--die-with-parent", "--new-session",
        "--ro-bind", "/usr", "/usr", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
        "--symlink", "usr/bin", "/bin", "--symlink", "usr/sbin", "/sbin",
        *_python_mounts(),
        "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
        "--ro-bind", str(tree), GUEST, "--chdir", GUEST,
        "--clearenv", "--setenv", "PATH", "/usr/bin:/bin", "--setenv", "HOME", "/tmp", "--setenv", "LANG", "C.UTF-8",
        "--", *argv,
    ]  # fmt: skip


async def run_confined(tree: Path, argv: list[str], limit_s: float = ANALYSER_TIME_S) -> Ran:
    """Run ``argv`` over the files under ``tree`` in a sandbox of its own (see the module docstring)."""
    proc = await asyncio.create_subprocess_exec(
        *sandbox_argv(tree, argv),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
        start_new_session=True,
        preexec_fn=_limits,
    )
    assert proc.stdout is not None and proc.stderr is not None

    async def read(stream: asyncio.StreamReader) -> bytes:
        kept = bytearray()
        while chunk := await stream.read(65536):
            kept += chunk[: max(0, MAX_OUTPUT - len(kept))]
        return bytes(kept)

    try:
        out, err, code = await asyncio.wait_for(
            asyncio.gather(read(proc.stdout), read(proc.stderr), proc.wait()), limit_s
        )
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        await proc.wait()
        return Ran(None, b"", b"")
    finally:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()
    return Ran(code, out, err)


def unavailable(tool: str, package: str) -> str | None:
    """Why ``tool`` cannot run here (None when it can)."""
    if shutil.which("bwrap") is None:
        return "bubblewrap (Debian package bubblewrap) is not installed, so it cannot run confined"
    if tool == "bandit":
        import importlib.util

        return None if importlib.util.find_spec("bandit") is not None else "bandit (PyPI) is not installed"
    return None if shutil.which(tool) is not None else f"{tool} (Debian package {package}) is not installed"


_DIRECTIVE = re.compile(rb"^(\s*#\s*)shellcheck(\s)", re.M)


def neuter_directives(data: bytes) -> bytes:
    """A shell script as shellcheck is to read it: its ``# shellcheck disable=...`` (and other directive) comments
    made plain comments, line for line, so a hostile script cannot silence the checks on itself. (bandit is told to
    ignore ``# nosec`` with ``--ignore-nosec``.)"""
    return _DIRECTIVE.sub(rb"\1shellcheck-ignored\2", data)


def _failed(tool: str, why: str) -> Finding:
    return Finding("analyser", REVIEW, f"{tool} did not check the skill's scripts: {why}")


async def bandit(tree: Path, scripts: list[str], limit_s: float = ANALYSER_TIME_S) -> list[Finding]:
    """bandit's findings on the Python ``scripts`` (paths under ``tree``): high severity with high confidence
    blocks, medium and high otherwise ask for review, low severity is left out (it flags any ``import
    subprocess``)."""
    if not scripts:
        return []
    why = unavailable("bandit", "bandit")
    if why is not None:
        return [_failed("bandit", why)]
    argv = [sys.executable, "-I", "-m", "bandit", "-q", "--ignore-nosec", "-f", "json", "--", *scripts]
    try:
        ran = await run_confined(tree, argv, limit_s)
    except OSError as exc:
        return [_failed("bandit", f"its sandbox did not start ({exc.strerror or exc})")]
    if ran.exit_code is None:
        return [_failed("bandit", f"it did not finish within {limit_s:g} s")]
    try:
        report: dict[str, Any] = json.loads(ran.stdout)
    except ValueError:
        tail = ran.stderr.decode(errors="replace").strip()[-300:]
        return [_failed("bandit", f"it exited {ran.exit_code} without a report ({tail or 'no output'})")]
    found: list[Finding] = []
    for r in report.get("results") or []:
        sev, conf = str(r.get("issue_severity", "")), str(r.get("issue_confidence", ""))
        if sev == "LOW":
            continue
        severity = BLOCK if sev == "HIGH" and conf == "HIGH" else REVIEW
        name = str(r.get("filename", "")).removeprefix("./")
        text = f"bandit {r.get('test_id')} ({sev.lower()} severity): {r.get('issue_text')}"
        found.append(Finding("bandit", severity, text, name, r.get("line_number")))
    for e in report.get("errors") or []:
        found.append(Finding("analyser", REVIEW, f"bandit could not read it: {e.get('reason')}", e.get("filename")))
    return found


async def shellcheck(tree: Path, scripts: list[str], limit_s: float = ANALYSER_TIME_S) -> list[Finding]:
    """shellcheck's errors and warnings on the shell ``scripts``, each asking for review (notes and style are
    left out)."""
    if not scripts:
        return []
    why = unavailable("shellcheck", "shellcheck")
    if why is not None:
        return [_failed("shellcheck", why)]
    # No ``.shellcheckrc`` read (the skill could bring one that disables every check), no ``source`` followed;
    # the skill's own ``# shellcheck disable=`` lines are neutered in the copy analysed (``neuter_directives``).
    argv = ["shellcheck", "--norc", "-f", "json", "-S", "warning", "--", *scripts]
    try:
        ran = await run_confined(tree, argv, limit_s)
    except OSError as exc:
        return [_failed("shellcheck", f"its sandbox did not start ({exc.strerror or exc})")]
    if ran.exit_code is None:
        return [_failed("shellcheck", f"it did not finish within {limit_s:g} s")]
    try:
        report = json.loads(ran.stdout or b"[]")
    except ValueError:
        tail = ran.stderr.decode(errors="replace").strip()[-300:]
        return [_failed("shellcheck", f"it exited {ran.exit_code} without a report ({tail or 'no output'})")]
    found: list[Finding] = []
    for r in report if isinstance(report, list) else []:
        text = f"shellcheck SC{r.get('code')} ({r.get('level')}): {r.get('message')}"
        found.append(Finding("shellcheck", REVIEW, text, str(r.get("file", "")), r.get("line")))
    return found
