"""Pipeline bodies that dispatch agents: ``conversation.promptAgent``, ``flow.forEach``, ``team.dispatch``,
``approval.gate``. ``BODIES`` is what the agents part lists in its ``Part``."""

from hangar.agents.bodies import prompt, team

BODIES = [*prompt.BODIES, *team.BODIES]
