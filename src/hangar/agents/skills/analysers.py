"""The static analysers a skill's bundled scripts are checked with, run confined: bandit for Python, shellcheck for
shell. The files they read are hostile (whoever published the skill wrote them to hurt the reader), so each
analyser runs in a sandbox of its own (``hangar.core.hosttool``): no network, the host's ``/usr`` and the server's
Python read-only, the skill's files read-only at ``/skill``, nothing writable but a fresh ``/tmp``, a minimal
environment, limits on memory, CPU, file size and processes (``LIMITS``), and a time bound after which its whole
process group is killed. What it prints is read up to ``MAX_OUTPUT`` bytes.

A skill's files cannot switch a check off: bandit ignores ``# nosec`` (``--ignore-nosec``) and reads no config from
the skill; shellcheck reads no ``.shellcheckrc`` (``--norc``) and is given the scripts with their directive comments
neutered (``neuter_directives``).

An analyser that cannot run here (bubblewrap, bandit or shellcheck missing) or fails is itself a ``review``
finding: a skill is never passed on a check that did not happen.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import sys
from pathlib import Path
from typing import Any

from hangar.agents.skills.checks import BLOCK, REVIEW, Finding
from hangar.core.hosttool import Ran, ToolLimits, python_mounts, run_tool

ANALYSER_TIME_S = 60.0  # each analyser's run over one skill
MAX_OUTPUT = 4 * 1024 * 1024
MEMORY_BYTES = 1024 * 1024 * 1024  # address space of an analyser
GUEST = "/skill"
# An analyser writes no file but its own scratch in /tmp; bandit and shellcheck run a process or two.
LIMITS = ToolLimits(
    seconds=ANALYSER_TIME_S, cpu_s=int(ANALYSER_TIME_S) + 5, memory=MEMORY_BYTES, file_size=16 << 20,
    processes=32, output=MAX_OUTPUT, errors=MAX_OUTPUT,
)  # fmt: skip


async def run_confined(tree: Path, argv: list[str], limit_s: float = ANALYSER_TIME_S) -> Ran:
    """Run ``argv`` over the files under ``tree`` (read-only at ``/skill``, its working directory) in a sandbox of
    its own, with the server's Python (see the module docstring)."""
    limits = dataclasses.replace(LIMITS, seconds=limit_s)
    return await run_tool(argv, limits, mounts=[*python_mounts(), (tree, GUEST)], workdir=GUEST)


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
    if ran.code is None:
        return [_failed("bandit", f"it did not finish within {limit_s:g} s")]
    try:
        report: dict[str, Any] = json.loads(ran.stdout)
    except ValueError:
        tail = ran.stderr.decode(errors="replace").strip()[-300:]
        return [_failed("bandit", f"it exited {ran.code} without a report ({tail or 'no output'})")]
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
    if ran.code is None:
        return [_failed("shellcheck", f"it did not finish within {limit_s:g} s")]
    try:
        report = json.loads(ran.stdout or b"[]")
    except ValueError:
        tail = ran.stderr.decode(errors="replace").strip()[-300:]
        return [_failed("shellcheck", f"it exited {ran.code} without a report ({tail or 'no output'})")]
    found: list[Finding] = []
    for r in report if isinstance(report, list) else []:
        text = f"shellcheck SC{r.get('code')} ({r.get('level')}): {r.get('message')}"
        found.append(Finding("shellcheck", REVIEW, text, str(r.get("file", "")), r.get("line")))
    return found
