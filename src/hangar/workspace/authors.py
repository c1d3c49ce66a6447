"""Who wrote a message: a person, an agent, or the system; and how an op's caller or a pipeline step signs one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hangar.pipelines import StepContext
    from hangar.rpc.context import OpContext


@dataclass(frozen=True)
class Author:
    """Who wrote a message: a user, an agent, or the system (pipelines, the server)."""

    kind: str
    id: str
    name: str

    @staticmethod
    def system(name: str = "Hangar") -> Author:
        return Author("system", "system", name)


def pipeline_author(step: StepContext) -> Author:
    """How pipeline-authored messages are signed: the run, and the step's label."""
    return Author("system", step.run_key, step.label or "Pipeline")


def author_of(ctx: OpContext) -> Author:
    """How a message sent through an op is signed: the person, or the agent whose credential called."""
    if ctx.principal.agent_id is not None:
        return Author("agent", ctx.principal.agent_id, ctx.principal.display_name)
    return Author("user", ctx.principal.user_id, ctx.principal.display_name)
