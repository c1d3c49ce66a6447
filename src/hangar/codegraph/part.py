"""The code graph part: its tables, the ``code.*`` ops and the ``code.index`` body and the route a worker
running it fetches the commit through."""

from __future__ import annotations

from hangar.codegraph.body import BODIES
from hangar.codegraph.lane import ROUTES
from hangar.codegraph.ops import CODE_OPS
from hangar.codegraph.tables import MIGRATIONS
from hangar.core.part import Part

CODEGRAPH_PART = Part(name="codegraph", ops=CODE_OPS, routes=ROUTES, bodies=BODIES, migrations=[MIGRATIONS])
