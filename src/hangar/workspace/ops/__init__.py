"""The workspace part's ops, one module per family; ``WORKSPACE_OPS`` lists them all for ``part.py``.

- ``spaces``: spaces and their messages (``spaces.*``, ``messages.*``), with the watch that follows a space live.
- ``tickets``: tickets and sub-tickets (``tickets.*``).
- ``repos``: the workspace's repos (``repos.*``) and their worktrees (``worktrees.*``).
"""

from hangar.core.part import OpFunction
from hangar.workspace.ops import repos, spaces, tickets

WORKSPACE_OPS: list[OpFunction] = [*spaces.OPS, *tickets.OPS, *repos.OPS]
