"""Ops on a workspace's agent skills (``skills.*``): install from a discovery index, upload, list, read the
findings, override a review, remove. Installing and uploading scan the skill at once, so its verdict is known
before any agent could load it; ``skills.analyze`` (the pipeline body) scans them all again."""

from __future__ import annotations

import base64
import binascii
from typing import Any

from pydantic import Field

from hangar.agents.skills import index
from hangar.agents.skills.archive import MAX_SKILL_BYTES, unpack
from hangar.agents.skills.fetch import fetch
from hangar.agents.skills.scan import MAX_INDEX_BYTES, analyze
from hangar.agents.skills.store import Skill, SkillStore, digest_of
from hangar.core.part import OpFunction
from hangar.core.types import Timestamp
from hangar.errors import InvalidArgs
from hangar.rpc.context import OpContext
from hangar.rpc.registry import Args, Result, op

# An upload travels in one RPC frame (256 KiB) as base64; a larger skill is installed from an index.
MAX_UPLOAD_BYTES = 160 * 1024
MAX_REASON = 2000


class FindingView(Result):
    kind: str
    severity: str  # ``block`` or ``review``
    message: str
    file: str | None = None
    line: int | None = None


class SkillView(Result):
    id: str
    name: str
    description: str
    kind: str  # ``skill-md`` or ``archive``
    source: str  # ``index`` or ``upload``
    index_url: str | None
    url: str | None
    digest: str
    size: int
    verdict: str  # ``unscanned``, ``pass``, ``review`` or ``blocked``
    findings: int
    scanned_at: Timestamp | None
    overridden: bool
    override_by: str | None
    override_reason: str | None
    loaded: bool  # whether agents load it now
    installed_by: str
    installed_at: Timestamp


class SkillList(Result):
    skills: list[SkillView]


class SkillFindings(Result):
    skill: SkillView
    findings: list[FindingView]


def view(skill: Skill) -> SkillView:
    return SkillView(
        id=skill.id, name=skill.name, description=skill.description, kind=skill.kind, source=skill.source,
        index_url=skill.index_url, url=skill.url, digest=skill.digest, size=skill.size, verdict=skill.verdict,
        findings=len(skill.findings), scanned_at=skill.scanned_at, overridden=skill.overridden,
        override_by=skill.override_by, override_reason=skill.override_reason, loaded=skill.loadable,
        installed_by=skill.installed_by, installed_at=skill.installed_at,
    )  # fmt: skip


async def _scanned(ctx: OpContext, skill: Skill) -> SkillView:
    done = await analyze(ctx.app, ctx.ws, skill.id)
    return view(done or await SkillStore(ctx.app).get(ctx.ws, skill.id))


class ListArgs(Args):
    pass


@op("skills.list", kind="read", scope="workspace")
async def skills_list(ctx: OpContext, args: ListArgs) -> SkillList:
    """The workspace's installed skills with their verdicts (``loaded``: whether agents load it now)."""
    return SkillList(skills=[view(s) for s in await SkillStore(ctx.app).all(ctx.ws)])


class InstallArgs(Args):
    index_url: str = Field(max_length=2048)
    name: str = Field(max_length=64)


@op("skills.install", kind="mutate", scope="workspace", min_role="admin", actions=["networkEgress"])
async def skills_install(ctx: OpContext, args: InstallArgs) -> SkillView:
    """Install the skill ``name`` an agent-skills discovery index (0.2.0) at ``indexUrl`` lists: its bytes are
    fetched and must hash to the digest the index gives (a mismatch is refused, naming both), then scanned."""
    by_owner = ctx.principal.is_server_owner
    raw = await fetch(ctx.app, args.index_url, by_owner=by_owner, limit=MAX_INDEX_BYTES, field="indexUrl")
    entry = index.find(index.parse(raw, args.index_url), args.name, args.index_url)
    content = await fetch(ctx.app, entry.url, by_owner=by_owner, limit=MAX_SKILL_BYTES, field="indexUrl")
    got = digest_of(content)
    if got != entry.digest:
        raise InvalidArgs(
            f"name: the bytes of {entry.name!r} at {entry.url} hash to {got}, but the index gives {entry.digest}; "
            "nothing was installed",
            field="name",
        )
    unpack(content, entry.kind)
    skill = await SkillStore(ctx.app).install(
        ctx.ws, name=entry.name, kind=entry.kind, description=entry.description, source="index",
        index_url=args.index_url, url=entry.url, digest=got, content=content, by=ctx.principal.label, by_owner=by_owner,
    )  # fmt: skip
    await ctx.audit(
        "skills.install", f"skill:{skill.id}", {"name": skill.name, "digest": got, "indexUrl": args.index_url}
    )
    return await _scanned(ctx, skill)


class UploadArgs(Args):
    name: str = Field(max_length=64)
    kind: str = Field(max_length=16)
    content_base64: str = Field(max_length=(MAX_UPLOAD_BYTES + 2) // 3 * 4)
    digest: str = Field(max_length=80)
    description: str = Field(default="", max_length=index.MAX_DESCRIPTION)


@op("skills.upload", kind="mutate", scope="workspace", min_role="admin")
async def skills_upload(ctx: OpContext, args: UploadArgs) -> SkillView:
    """Install a skill from its bytes (``contentBase64``, at most 160 KiB; ``kind`` ``skill-md`` or ``archive``),
    pinned by ``digest`` (``sha256:<hex>`` of the exact bytes, refused when they differ), then scanned."""
    if not index.NAME.match(args.name):
        raise InvalidArgs(f"name: {args.name!r} is not a skill name (a-z, 0-9 and -, at most 64)", field="name")
    if not index.DIGEST.match(args.digest):
        raise InvalidArgs("digest: give sha256: and 64 lowercase hex digits", field="digest")
    try:
        content = base64.b64decode(args.content_base64, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidArgs("contentBase64: not base64", field="contentBase64") from None
    if len(content) > MAX_UPLOAD_BYTES:
        raise InvalidArgs(
            f"contentBase64: the skill is {len(content)} bytes, more than {MAX_UPLOAD_BYTES}; install "
            "a larger one from an index",
            field="contentBase64",
        )
    got = digest_of(content)
    if got != args.digest:
        raise InvalidArgs(
            f"digest: the uploaded bytes hash to {got}, not {args.digest}; nothing was installed", field="digest"
        )
    unpack(content, args.kind, field="contentBase64")
    skill = await SkillStore(ctx.app).install(
        ctx.ws, name=args.name, kind=args.kind, description=args.description, source="upload", index_url=None,
        url=None, digest=got, content=content, by=ctx.principal.label, by_owner=ctx.principal.is_server_owner,
    )  # fmt: skip
    await ctx.audit("skills.upload", f"skill:{skill.id}", {"name": skill.name, "digest": got})
    return await _scanned(ctx, skill)


class SkillArgs(Args):
    skill_id: str = Field(max_length=64)


@op("skills.findings", kind="read", scope="workspace")
async def skills_findings(ctx: OpContext, args: SkillArgs) -> SkillFindings:
    """A skill with every finding of its last scan (kind, severity, message, file and line)."""
    skill = await SkillStore(ctx.app).get(ctx.ws, args.skill_id)
    return SkillFindings(skill=view(skill), findings=[FindingView(**_finding(f)) for f in skill.findings])


def _finding(raw: dict[str, Any]) -> dict[str, Any]:
    return {k: raw.get(k) for k in ("kind", "severity", "message", "file", "line")}


class OverrideArgs(Args):
    skill_id: str = Field(max_length=64)
    reason: str = Field(min_length=1, max_length=MAX_REASON)


@op("skills.override", kind="mutate", scope="workspace", min_role="admin")
async def skills_override(ctx: OpContext, args: OverrideArgs) -> SkillView:
    """Let a skill under ``review`` load, having read its findings (``reason`` says why; an audit row records
    it). It holds for the findings recorded now: a later scan that finds otherwise needs a new override. A
    ``blocked`` skill is refused: it is never loaded."""
    skill = await SkillStore(ctx.app).override(ctx.ws, args.skill_id, args.reason, ctx.principal.label)
    details = {"name": skill.name, "digest": skill.digest, "findings": len(skill.findings), "reason": args.reason}
    await ctx.audit("skills.override", f"skill:{skill.id}", details)
    return view(skill)


@op("skills.scan", kind="mutate", scope="workspace", min_role="admin", actions=["networkEgress"])
async def skills_scan(ctx: OpContext, args: SkillArgs) -> SkillView:
    """Scan one installed skill again now (the index read again for drift) and record its verdict."""
    return await _scanned(ctx, await SkillStore(ctx.app).get(ctx.ws, args.skill_id))


@op("skills.remove", kind="destructive", scope="workspace", min_role="admin")
async def skills_remove(ctx: OpContext, args: SkillArgs) -> SkillView:
    """Remove an installed skill: no agent run started after this loads it."""
    skill = await SkillStore(ctx.app).remove(ctx.ws, args.skill_id)
    await ctx.audit("skills.remove", f"skill:{skill.id}", {"name": skill.name, "digest": skill.digest})
    return view(skill)


OPS: list[OpFunction] = [
    skills_list, skills_install, skills_upload, skills_findings, skills_override, skills_scan, skills_remove,
]  # fmt: skip
