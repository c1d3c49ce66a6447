"""Guardrails: an op's action classes checked against the workspace's and the space's policy.

Allowed by default. A read-only mode (workspace-wide or for one space) denies every mutating op and every
action class wholesale. A space's autonomy setting can demote action classes to ask-first: the op is then
answered ``refused`` naming the class (``AskFirst``), unless the door the call came through could ask the person
and they approved this one call (the MCP endpoint asks through an elicitation).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.core import tables
from hangar.core.clock import Clock
from hangar.core.stamps import WorkspaceCaches
from hangar.errors import InvalidArgs, Refused
from hangar.rpc.registry import ACTION_CLASSES, OpSpec

WORKSPACE_SCOPE = "workspace"


def space_scope(space_id: str) -> str:
    return f"space:{space_id}"


@dataclass(frozen=True)
class GuardrailSetting:
    read_only: bool = False
    ask_first: frozenset[str] = frozenset()


COUNTER = "guardrails"


class AskFirst(Refused):
    """A guardrail asks a person before this op's action classes run."""

    def __init__(self, message: str, classes: frozenset[str]) -> None:
        super().__init__(message, detail_code="ask_first")
        self.classes = classes


class Guardrails:
    """Policies are checked on every mutating op, so they are kept in memory while the workspace's
    ``guardrails`` change counter stays put (a policy another process saves applies at once)."""

    def __init__(self, clock: Clock, stamp: Callable[[str, str], Awaitable[int]]) -> None:
        self._clock = clock
        self._cache: WorkspaceCaches[str, GuardrailSetting] = WorkspaceCaches(stamp, COUNTER)

    async def get(self, engine: AsyncEngine, workspace_id: str, scope: str) -> GuardrailSetting:
        async def load() -> GuardrailSetting:
            g = tables.guardrail_settings
            async with engine.connect() as conn:
                row = (await conn.execute(sa.select(g).where(g.c.scope == scope))).first()
            if row is None:
                return GuardrailSetting()
            return GuardrailSetting(bool(row.read_only), frozenset(row.ask_first))

        return await self._cache.get(workspace_id, scope, load)

    async def set(
        self, engine: AsyncEngine, workspace_id: str, scope: str, setting: GuardrailSetting
    ) -> GuardrailSetting:
        unknown = setting.ask_first - ACTION_CLASSES
        if unknown:
            raise InvalidArgs(f"unknown action classes: {', '.join(sorted(unknown))}", field="askFirst")
        g = tables.guardrail_settings
        values = {
            "read_only": setting.read_only,
            "ask_first": sorted(setting.ask_first),
            "updated_at": self._clock.now(),
        }
        async with engine.begin() as conn:
            done = await conn.execute(sa.update(g).where(g.c.scope == scope).values(**values))
            if done.rowcount == 0:
                await conn.execute(sa.insert(g).values(scope=scope, **values))
        return setting

    async def check(self, engine: AsyncEngine, workspace_id: str, spec: OpSpec, space_id: str | None) -> None:
        """Raise ``Refused`` when the policy does not allow ``spec`` here."""
        if (not spec.mutating and not spec.actions) or spec.governs_guardrails:
            return
        scopes = [WORKSPACE_SCOPE] + ([space_scope(space_id)] if space_id else [])
        settings = [await self.get(engine, workspace_id, s) for s in scopes]
        for scope, setting in zip(scopes, settings, strict=True):
            if setting.read_only:
                where = "this workspace" if scope == WORKSPACE_SCOPE else "this space"
                what = f"action classes {', '.join(sorted(spec.actions))}" if spec.actions else "changes"
                raise Refused(f"{spec.name} refused: {where} is in read-only mode, which denies {what}")
        for scope, setting in zip(scopes, settings, strict=True):
            demoted = spec.actions & setting.ask_first
            if demoted:
                where = "this workspace" if scope == WORKSPACE_SCOPE else "this space"
                raise AskFirst(
                    f"{spec.name} refused: {where} asks first for {', '.join(sorted(demoted))}; "
                    "a person must approve it",
                    demoted,
                )
