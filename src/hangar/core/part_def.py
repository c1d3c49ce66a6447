"""The core part: workspace tables for events, audit and guardrails, and their ops."""

from __future__ import annotations

from hangar.core.context import AppContext
from hangar.core.ops import CORE_OPS
from hangar.core.part import Part
from hangar.core.tables import MIGRATIONS
from hangar.rpc.guardrails import Guardrails


async def _start(ctx: AppContext) -> None:
    ctx.provide(Guardrails(ctx.clock, ctx.dbs.stamp))


CORE_PART = Part(name="core", ops=CORE_OPS, migrations=[MIGRATIONS], start=_start)
