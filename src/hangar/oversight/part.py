"""The oversight part: its ops, and the guardrails service the dispatcher enforces."""

from __future__ import annotations

from hangar.core.context import AppContext
from hangar.core.part import Part
from hangar.oversight.ops import OVERSIGHT_OPS
from hangar.rpc.guardrails import Guardrails


async def _start(ctx: AppContext) -> None:
    ctx.provide(Guardrails(ctx.clock, ctx.dbs.stamp))


OVERSIGHT_PART = Part(name="oversight", ops=OVERSIGHT_OPS, start=_start)
