"""The ``skills`` table of a workspace: installing, listing, recording a scan, overriding a review, removing, and
what agents load.

Every check-then-write runs in one serialized transaction, and every reader reads the database afresh: another
process (a second server, a worker scanning) may change the rows at any time. A scan's result is written only
onto the bytes it scanned (the digest it read), so a skill replaced meanwhile never inherits a verdict. What
agents load is checked again when it is loaded: the stored bytes must still hash to the pinned digest.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from hangar.agents.adapters.base import LoadedSkill
from hangar.agents.skills.archive import SKILL_MD, unpack
from hangar.agents.skills.events import SkillChanged
from hangar.agents.tables import skills as T
from hangar.core.context import AppContext
from hangar.core.ids import new_id
from hangar.errors import Conflict, InvalidArgs, NotFound, Refused

MAX_SKILLS = 100  # installed per workspace
# The SKILL.md text of all installed skills together: what every agent run of the workspace could be given.
MAX_INSTRUCTIONS_BYTES = 256 * 1024
VERDICTS = ("unscanned", "pass", "review", "blocked")


def digest_of(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def fingerprint(findings: list[dict[str, Any]]) -> str:
    """What an override was given on: the findings, as recorded."""
    return digest_of(json.dumps(findings, sort_keys=True).encode())


@dataclass(frozen=True)
class Skill:
    id: str
    name: str
    description: str
    kind: str
    source: str  # ``index`` or ``upload``
    index_url: str | None
    url: str | None
    digest: str
    size: int
    verdict: str
    findings: list[dict[str, Any]]
    scanned_at: datetime | None
    override_by: str | None
    override_reason: str | None
    overridden: bool  # an admin's override holds for the findings recorded now
    installed_by: str
    by_owner: bool
    installed_at: datetime

    @property
    def loadable(self) -> bool:
        return self.verdict == "pass" or (self.verdict == "review" and self.overridden)


_LISTED = [c for c in T.c if c.name != "content"]


def _skill(row: Any) -> Skill:
    m = row._mapping
    findings = list(m["findings"] or [])
    return Skill(
        id=m["id"], name=m["name"], description=m["description"], kind=m["kind"], source=m["source"],
        index_url=m["index_url"], url=m["url"], digest=m["digest"], size=m["size"], verdict=m["verdict"],
        findings=findings, scanned_at=m["scanned_at"], override_by=m["override_by"],
        override_reason=m["override_reason"],
        overridden=m["override_findings"] is not None and m["override_findings"] == fingerprint(findings),
        installed_by=m["installed_by"], by_owner=bool(m["by_owner"]), installed_at=m["installed_at"],
    )  # fmt: skip


class SkillStore:
    def __init__(self, app: AppContext) -> None:
        self._app = app

    async def all(self, workspace_id: str) -> list[Skill]:
        engine = await self._app.dbs.workspace(workspace_id)
        async with engine.connect() as conn:
            rows = (await conn.execute(sa.select(*_LISTED).order_by(T.c.name))).all()
        return [_skill(r) for r in rows]

    async def get(self, workspace_id: str, skill_id: str, field: str = "skillId") -> Skill:
        engine = await self._app.dbs.workspace(workspace_id)
        async with engine.connect() as conn:
            row = (await conn.execute(sa.select(*_LISTED).where(T.c.id == skill_id))).first()
        if row is None:
            raise NotFound(f"{field}: no skill {skill_id!r} in this workspace")
        return _skill(row)

    async def content(self, workspace_id: str, skill_id: str) -> tuple[str, bytes]:
        """The skill's pinned digest and its stored bytes, read together."""
        engine = await self._app.dbs.workspace(workspace_id)
        async with engine.connect() as conn:
            row = (await conn.execute(sa.select(T.c.digest, T.c.content).where(T.c.id == skill_id))).first()
        if row is None:
            raise NotFound(f"skillId: no skill {skill_id!r} in this workspace")
        return str(row.digest), bytes(row.content)

    async def install(
        self, workspace_id: str, *, name: str, kind: str, description: str, source: str, index_url: str | None,
        url: str | None, digest: str, content: bytes, by: str, by_owner: bool,
    ) -> Skill:  # fmt: skip
        """Record a skill whose ``content`` hashes to ``digest`` (checked by the caller, checked again here)."""
        if digest_of(content) != digest:
            raise InvalidArgs(f"digest: the skill's bytes are {digest_of(content)}, not {digest}", field="digest")
        instructions = len(unpack(content, kind)[SKILL_MD])
        skill_id = new_id()
        async with self._app.bus.transaction(workspace_id, serialized=True) as tx:
            taken = (await tx.conn.execute(sa.select(T.c.id).where(T.c.name == name))).first()
            if taken is not None:
                raise Conflict(f"name: a skill {name!r} is installed already; remove it before installing another")
            count, held = (
                await tx.conn.execute(
                    sa.select(sa.func.count(), sa.func.coalesce(sa.func.sum(T.c.instructions_bytes), 0))
                )
            ).one()
            if count >= MAX_SKILLS:
                raise Refused(f"this workspace holds {count} skills, the most it may ({MAX_SKILLS}); remove one first")
            if held + instructions > MAX_INSTRUCTIONS_BYTES:
                raise Refused(
                    f"its {SKILL_MD} is {instructions} bytes and the installed skills' come to {held}: agents would "
                    f"be given more than {MAX_INSTRUCTIONS_BYTES} bytes of skill instructions at every run; remove "
                    "one first"
                )
            await tx.conn.execute(
                sa.insert(T).values(
                    id=skill_id, name=name, description=description, kind=kind, source=source, index_url=index_url,
                    url=url, digest=digest, content=content, size=len(content), instructions_bytes=instructions,
                    verdict="unscanned", findings=[],
                    installed_by=by, by_owner=by_owner, installed_at=self._app.clock.now(),
                )
            )  # fmt: skip
            await tx.publish(SkillChanged(workspace_id=workspace_id, skill_id=skill_id, name=name, verdict="unscanned"))
        return await self.get(workspace_id, skill_id)

    async def record_scan(
        self, workspace_id: str, skill_id: str, digest: str, verdict: str, findings: list[dict[str, Any]]
    ) -> Skill | None:
        """Record a scan of the bytes pinned as ``digest``; None when the skill is gone or was replaced meanwhile.
        An override given on other findings no longer holds (``Skill.overridden`` compares them)."""
        async with self._app.bus.transaction(workspace_id, serialized=True) as tx:
            done = await tx.conn.execute(
                sa.update(T)
                .where(T.c.id == skill_id, T.c.digest == digest)
                .values(verdict=verdict, findings=findings, scanned_at=self._app.clock.now())
            )
            if done.rowcount == 0:
                return None
            name = (await tx.conn.execute(sa.select(T.c.name).where(T.c.id == skill_id))).scalar_one()
            await tx.publish(SkillChanged(workspace_id=workspace_id, skill_id=skill_id, name=name, verdict=verdict))
        return await self.get(workspace_id, skill_id)

    async def override(self, workspace_id: str, skill_id: str, reason: str, by: str) -> Skill:
        """An admin lets a skill whose verdict is ``review`` load, on the findings recorded now."""
        async with self._app.bus.transaction(workspace_id, serialized=True) as tx:
            row = (
                await tx.conn.execute(sa.select(T.c.name, T.c.verdict, T.c.findings).where(T.c.id == skill_id))
            ).first()
            if row is None:
                raise NotFound(f"skillId: no skill {skill_id!r} in this workspace")
            if row.verdict == "blocked":
                raise Refused(
                    f"skill {skill_id} is blocked: a blocked skill is never loaded, and no override changes that; "
                    "remove it, and install a version without the blocking findings"
                )
            if row.verdict != "review":
                raise Refused(f"skill {skill_id} is {row.verdict}: only a skill under review is overridden")
            await tx.conn.execute(
                sa.update(T)
                .where(T.c.id == skill_id)
                .values(override_by=by, override_reason=reason, override_findings=fingerprint(list(row.findings)))
            )
            await tx.publish(
                SkillChanged(workspace_id=workspace_id, skill_id=skill_id, name=row.name, verdict="review")
            )
        return await self.get(workspace_id, skill_id)

    async def remove(self, workspace_id: str, skill_id: str) -> Skill:
        skill = await self.get(workspace_id, skill_id)
        async with self._app.bus.transaction(workspace_id, serialized=True) as tx:
            done = await tx.conn.execute(sa.delete(T).where(T.c.id == skill_id))
            if done.rowcount:
                gone = SkillChanged(workspace_id=workspace_id, skill_id=skill_id, name=skill.name, verdict="removed")
                await tx.publish(gone)
        return skill

    async def loaded(self, workspace_id: str) -> tuple[LoadedSkill, ...]:
        """What an agent run loads: the ``SKILL.md`` of each skill that passed (or whose review was overridden),
        whose stored bytes still hash to the pinned digest."""
        engine = await self._app.dbs.workspace(workspace_id)
        async with engine.connect() as conn:
            rows = (
                await conn.execute(sa.select(T).where(T.c.verdict.in_(("pass", "review"))).order_by(T.c.name))
            ).all()
        out: list[LoadedSkill] = []
        for row in rows:
            skill = _skill(row)
            content = bytes(row.content)
            if not skill.loadable or digest_of(content) != skill.digest:
                continue
            try:
                text = unpack(content, skill.kind)[SKILL_MD].decode("utf-8")
            except (InvalidArgs, UnicodeDecodeError):
                continue
            out.append(LoadedSkill(skill.name, skill.digest, text))
        return tuple(out)
