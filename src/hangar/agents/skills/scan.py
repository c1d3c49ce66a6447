"""One skill's supply-chain scan: its findings and its verdict.

In order: the stored bytes against the pinned digest; for a skill installed from an index, the index read again
(digest drift: the index now describes other bytes); the bytes unpacked (``archive``); every file through the text
checks (``checks``); the hosts its files name against the workspace's allowlist (what confined code of the
workspace may reach, asked of the confinement, plus the host the skill came from); its Python scripts through
bandit and its shell scripts through shellcheck (``analysers``, confined, each time-bound).
"""

from __future__ import annotations

import asyncio
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from hangar.agents.skills import analysers, checks, index
from hangar.agents.skills.archive import MAX_SKILL_BYTES, Files, unpack, write_tree
from hangar.agents.skills.checks import BLOCK, REVIEW, Finding
from hangar.agents.skills.fetch import fetch
from hangar.agents.skills.store import Skill, SkillStore, digest_of
from hangar.core.confine import Confinement, Scope
from hangar.core.context import AppContext
from hangar.errors import HangarError

MAX_INDEX_BYTES = 1024 * 1024
_PY_SHEBANG = re.compile(rb"^#![^\n]*\bpython[0-9.]*\b")
_SH_SHEBANG = re.compile(rb"^#![^\n]*\b(?:ba|da|k)?sh\b")


@dataclass(frozen=True)
class Report:
    verdict: str
    findings: list[Finding]


def scripts(files: Files) -> tuple[list[str], list[str]]:
    """The Python and the shell scripts among ``files``, by extension or by ``#!`` line."""
    python: list[str] = []
    shell: list[str] = []
    for name, data in files.items():
        if name.endswith(".py") or _PY_SHEBANG.match(data):
            python.append(name)
        elif name.endswith((".sh", ".bash")) or _SH_SHEBANG.match(data):
            shell.append(name)
    return python, shell


async def _drift(app: AppContext, skill: Skill) -> list[Finding]:
    if skill.source != "index" or skill.index_url is None:
        return []
    try:
        raw = await fetch(app, skill.index_url, by_owner=skill.by_owner, limit=MAX_INDEX_BYTES, field="indexUrl")
        entries = index.parse(raw, skill.index_url)
    except HangarError as exc:
        return [Finding("digestDrift", REVIEW, f"the index could not be read again, so drift is unknown: {exc}")]
    entry = next((e for e in entries if e.name == skill.name), None)
    if entry is None:
        return [Finding("digestDrift", REVIEW, f"the index at {skill.index_url} no longer lists {skill.name!r}")]
    if entry.digest != skill.digest:
        return [
            Finding(
                "digestDrift",
                BLOCK,
                f"the index now gives {entry.digest} for {skill.name!r}; the installed "
                f"bytes are {skill.digest}: what it publishes changed since the install",
            )
        ]
    return []


async def _allowed(app: AppContext, workspace_id: str, host: str, origin: str | None) -> bool:
    if origin is not None and host == origin:
        return True
    confinement = app.maybe_service(Confinement)
    if confinement is None:
        return False
    # The allowlist confined code of this workspace gets (no space: the baseline and the apt mirrors).
    scope = Scope(key=f"skills:{workspace_id}", workspace_id=workspace_id, workdir=Path("/nonexistent"))
    return await confinement.reaches(scope, host)


async def _network(
    app: AppContext, workspace_id: str, skill: Skill, named: dict[str, list[tuple[str, int]]]
) -> list[Finding]:
    """``named``: per file, the hosts it names (``checks.destinations``)."""
    origin = urlsplit(skill.url or skill.index_url or "").hostname
    found: list[Finding] = []
    for name, hosts in named.items():
        for host, line in hosts[: checks.MAX_FINDINGS_PER_CHECK]:
            if not await _allowed(app, workspace_id, host, origin):
                message = f"{name} names {host}, which is outside the workspace's allowlist"
                found.append(Finding("network", REVIEW, message, name, line))
        if len(hosts) > checks.MAX_FINDINGS_PER_CHECK:
            more = len(hosts) - checks.MAX_FINDINGS_PER_CHECK
            found.append(Finding("network", REVIEW, f"{name} names {more} more hosts, not checked one by one", name))
    return found


def _read(files: Files) -> tuple[list[Finding], dict[str, str], dict[str, list[tuple[str, int]]]]:
    """The text checks over every file (CPU work, run off the event loop): findings, the text files, and the
    hosts each names."""
    findings: list[Finding] = []
    texts: dict[str, str] = {}
    named: dict[str, list[tuple[str, int]]] = {}
    for name, data in files.items():
        text = checks.text_of(data)
        if text is None:
            findings += checks.binary(name, data)
            continue
        texts[name] = text
        findings += checks.secrets(name, text) + checks.obfuscation(name, text)
        findings += checks.instruction_overrides(name, text)
        named[name] = checks.destinations(text)
    return findings, texts, named


async def scan(
    app: AppContext, workspace_id: str, skill: Skill, content: bytes, *, limit_s: float | None = None
) -> Report:
    """The findings on ``content``, the bytes stored for ``skill``, and its verdict."""
    if digest_of(content) != skill.digest:
        drift = Finding(
            "digestDrift", BLOCK, f"the stored bytes are {digest_of(content)}, not the pinned {skill.digest}"
        )
        return Report("blocked", [drift])
    findings = await _drift(app, skill)
    try:
        files = unpack(content, skill.kind)
    except HangarError as exc:
        findings.append(Finding("archive", BLOCK, str(exc)))
        return Report(checks.verdict(findings), findings)
    found_in_text, texts, named = await asyncio.to_thread(_read, files)
    findings += found_in_text
    findings += await _network(app, workspace_id, skill, named)
    python, shell = scripts({n: files[n] for n in texts})
    if python or shell:
        limit = analysers.ANALYSER_TIME_S if limit_s is None else limit_s
        with tempfile.TemporaryDirectory(prefix="hangar-skill-") as tmp:
            tree = Path(tmp) / "skill"
            tree.mkdir()
            analysed = {n: analysers.neuter_directives(files[n]) if n in shell else files[n] for n in texts}
            await asyncio.to_thread(write_tree, analysed, tree)
            found = await asyncio.gather(
                analysers.bandit(tree, python, limit), analysers.shellcheck(tree, shell, limit)
            )
        findings += [f for group in found for f in group]
    return Report(checks.verdict(findings), findings)


async def analyze(app: AppContext, workspace_id: str, skill_id: str) -> Skill | None:
    """Scan one installed skill and record its verdict; None when it was removed or replaced meanwhile."""
    store = SkillStore(app)
    skill = await store.get(workspace_id, skill_id)
    digest, content = await store.content(workspace_id, skill_id)
    if digest != skill.digest:
        return None
    report = await scan(app, workspace_id, skill, content)
    return await store.record_scan(
        workspace_id, skill_id, digest, report.verdict, [f.to_json() for f in report.findings]
    )


__all__ = ["MAX_SKILL_BYTES", "Report", "analyze", "scan", "scripts"]
