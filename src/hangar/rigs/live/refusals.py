"""What a rig's egress gate refused, for the people watching the rig: a program that cannot resolve a host says
only "Could not resolve host", so the rig's view names the host and the rule that refused it instead.

Each refusal the gate records (``EgressGate.on_refused``) is kept here per host and rule, the latest ``KEPT`` of
them (the rig's status, ``rig.watch``'s first reply, shows them), and told to the rig's watchers as an ``egress``
event the first time and again at most every ``REPEAT_S`` while it recurs (a program retrying, a resolver asking
for each address family, must not flood the view). A grant of the host (``rig.grantHosts``) clears its allowlist
refusals and tells the watchers (an ``egressGranted`` event). Only the rig's watchers hear of it: ``rig.watch`` is
held to membership of the rig's workspace and to a credential's space, like every rig op.
"""

from __future__ import annotations

import collections
from datetime import UTC, datetime
from typing import cast, get_args

from hangar.errors import InvalidArgs
from hangar.rigs.egress.allowlist import matches, validate_pattern
from hangar.rigs.egress.gate import EgressEvent
from hangar.rigs.results import EgressRefusal, EgressRule

KEPT = 20  # distinct refusals (host and rule) a rig keeps for its status
REPEAT_S = 10.0  # the same refusal is told again at most this often while it recurs

_RULES: frozenset[str] = frozenset(get_args(EgressRule))


def _host(event: EgressEvent) -> str:
    """The name the rig asked for, without the HTTP default port a Host header may carry."""
    return event.target.removesuffix(":80") if event.kind == "http" else event.target


def _grantable(host: str, rule: str) -> bool:
    """Whether an admin's ``rig.grantHosts`` of ``host`` lets it through: a name not on the allowlist, which the
    grant's own validation would take (never an address, a single label or a placeholder)."""
    if rule != "allowlist":
        return False
    try:
        validate_pattern(host)
    except InvalidArgs:
        return False
    return True


class RecentRefusals:
    """The latest refusals of one rig's gate, by host and rule, least recent first."""

    def __init__(self) -> None:
        self._rows: collections.OrderedDict[tuple[str, str], tuple[EgressRefusal, float]] = collections.OrderedDict()

    def add(self, event: EgressEvent) -> EgressRefusal | None:
        """Keep ``event``; the refusal to tell the rig's watchers now, or None while it was told too recently."""
        rule = event.rule if event.rule in _RULES else "protocol"
        host = _host(event)
        key = (host, rule)
        earlier = self._rows.pop(key, None)
        count = earlier[0].count + 1 if earlier is not None else 1
        row = EgressRefusal(
            host=host,
            kind=event.kind,
            rule=cast(EgressRule, rule),
            reason=event.reason,
            grantable=_grantable(host, rule),
            count=count,
            at=datetime.fromtimestamp(event.at, UTC),
        )
        told_at = earlier[1] if earlier is not None else None
        due = told_at is None or event.at - told_at >= REPEAT_S
        self._rows[key] = (row, event.at if due or told_at is None else told_at)
        while len(self._rows) > KEPT:
            self._rows.popitem(last=False)
        return row if due else None

    def forget_granted(self, patterns: frozenset[str]) -> None:
        """Hosts an admin granted are done with: their allowlist refusals go."""
        for key in [k for k in self._rows if k[1] == "allowlist" and matches(k[0], patterns)]:
            del self._rows[key]

    def rows(self) -> list[EgressRefusal]:
        return [row for row, _ in self._rows.values()]
