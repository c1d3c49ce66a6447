"""The code graph part: its tables, the ``code.*`` ops and the ``code.index`` body."""

from __future__ import annotations

from hangar.codegraph.body import BODIES
from hangar.codegraph.ops import CODE_OPS
from hangar.codegraph.tables import MIGRATIONS
from hangar.core.part import Part

CODEGRAPH_PART = Part(name="codegraph", ops=CODE_OPS, bodies=BODIES, migrations=[MIGRATIONS])
