"""Small helpers shared by the workspace stores: timestamps on the wire, titles, authors."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from hangar.core.types import rfc3339_or_none
from hangar.errors import InvalidArgs

if TYPE_CHECKING:
    from hangar.pipelines import StepContext
    from hangar.rpc.context import OpContext

SPACE_TITLE_MAX = 48
# The state key ``messaging.createSpace`` publishes its space under, where later agent steps look for it.
SPACE_STATE_KEY = "pipeline_space_id"


def iso(value: datetime | None) -> str | None:
    """A stored timestamp on the wire (``rfc3339``)."""
    return rfc3339_or_none(value)


def clip_title(text: str, limit: int = SPACE_TITLE_MAX) -> str:
    """A title cut to ``limit`` characters with an ellipsis, for titles made from free text (prompts, requests)."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def require_text(value: str, field: str, *, limit: int) -> str:
    """A trimmed, non-empty string no longer than ``limit``; otherwise ``InvalidArgs`` naming the field."""
    cleaned = value.strip()
    if not cleaned:
        raise InvalidArgs(f"{field} must not be empty", field=field)
    if len(cleaned) > limit:
        raise InvalidArgs(f"{field} is {len(cleaned)} characters; the limit is {limit}", field=field)
    return cleaned


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
