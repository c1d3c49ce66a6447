"""The agents part's ops, one module per family; ``AGENT_OPS`` lists them all for ``part.py``.

- ``agents``: agents (``agents.*``), their runs (``runs.*``) and dispatching a team (``teams.dispatch``, which
  needs the runner).
- ``teams``: teams of agents (``teams.*`` but dispatch).
"""

from hangar.agents.ops import agents, teams
from hangar.core.part import OpFunction

AGENT_OPS: list[OpFunction] = [*agents.OPS, *teams.OPS]
