"""Pipeline bodies that dispatch agents: ``conversation.promptAgent``, ``flow.forEach``, ``team.dispatch``,
``approval.gate``; with the workspace part's ``messaging.createSpace``, ``messaging.postMessage`` and
``worktree.cleanup``. ``BODIES`` is what the pipelines catalog imports."""

from hangar.agents.bodies import prompt, team
from hangar.workspace import bodies as workspace_bodies

BODIES = [*workspace_bodies.BODIES, *prompt.BODIES, *team.BODIES]
