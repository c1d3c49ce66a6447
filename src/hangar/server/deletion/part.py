"""Workspace deletion as a part of the server: its op, its server table, and at start the deletions a stopped
process left half done (``steps.resume_all``).

It lives with the composition, not among the parts, because deleting a workspace reaches into all of them (rigs,
runs, chat connections, files): only the composition may."""

from __future__ import annotations

from hangar.core.context import AppContext
from hangar.core.part import Part
from hangar.server.deletion import steps
from hangar.server.deletion.ops import DELETION_OPS
from hangar.server.deletion.tables import MIGRATIONS


async def _start(app: AppContext) -> None:
    if app.bus.following:  # a server, not a command run on the data directory
        await steps.resume_all(app)


DELETION_PART = Part(name="deletion", ops=DELETION_OPS, migrations=[MIGRATIONS], start=_start)
