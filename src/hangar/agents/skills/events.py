"""The event of skills: one was installed, scanned, overridden or removed (clients listing skills read them again;
a pipeline can trigger on a verdict)."""

from __future__ import annotations

from typing import ClassVar

from hangar.core.event_types import DomainEvent


class SkillChanged(DomainEvent):
    type: ClassVar[str] = "skills.changed"
    skill_id: str
    name: str
    verdict: str  # ``unscanned``, ``pass``, ``review`` or ``blocked``; ``removed`` when it is gone


SKILL_EVENTS: tuple[type[DomainEvent], ...] = (SkillChanged,)
