"""The label sets and buckets of the server's metrics (``hangar.core.metrics``), apart from ``prometheus_client``
so that a process that counts nothing (an admin command, a server with ``HANGAR_METRICS=false``) can use them without
loading it."""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Mapping

from hangar.errors import ERROR_CODES

# The ways an op call comes in (``OpContext.door``): the RPC socket, the MCP endpoint, an agent's tool call (a
# pipeline's agent steps included), the chat bridge acting for a person.
DOORS = frozenset({"socket", "mcp", "agent", "chat"})
OUTCOMES = frozenset({"ok", *ERROR_CODES})
OTHER = "other"
UNKNOWN_OP = "unknown"  # the op label of a frame naming no registered op (the name itself is the caller's)
SSO_PROTOCOLS = frozenset({"saml", "oidc"})
HTTP_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})

# Op latencies run from a tenth of a millisecond (server.info) to minutes (an agent's turn, a pack build).
BISECT = bisect.bisect_left  # looked up once: ``add`` runs on every op call
OP_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)
FIRST_BUCKET = OP_BUCKETS[0]
LAG_BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
SLOW_BUCKETS = (0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800)

RigCounts = Callable[[], Mapping[tuple[str, str], int]]


def bounded(value: str, allowed: Iterable[str]) -> str:
    """``value`` when it is one of ``allowed``, else ``other``: a label never takes a value from outside its set."""
    return value if value in allowed else OTHER
