"""The per-rig egress gate: DNS from the allowlist, HTTP Host and TLS SNI checks, everything else dropped."""

from hangar.rigs.egress.allowlist import (
    DEVELOPER_BASELINE,
    matches,
    terminal_default_allowlist,
    validate_pattern,
    validate_patterns,
)
from hangar.rigs.egress.gate import EgressEvent, EgressGate
from hangar.rigs.egress.rules import GATE_ADDRESS, GatePorts, ruleset

__all__ = [
    "DEVELOPER_BASELINE",
    "GATE_ADDRESS",
    "EgressEvent",
    "EgressGate",
    "GatePorts",
    "matches",
    "ruleset",
    "terminal_default_allowlist",
    "validate_pattern",
    "validate_patterns",
]
