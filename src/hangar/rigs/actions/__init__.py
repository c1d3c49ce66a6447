"""Action verb tables of the drivable surfaces and their total parser (see ``base``)."""

from __future__ import annotations

from hangar.rigs.actions.base import ParsedAction, Verb, VerbTable, parse_action
from hangar.rigs.actions.browser import BROWSER_USE
from hangar.rigs.actions.desktop import COMPUTER_USE
from hangar.rigs.actions.device import MOBILE_USE, SIM_USE

TABLES: dict[str, VerbTable] = {t.tool: t for t in (COMPUTER_USE, BROWSER_USE, MOBILE_USE, SIM_USE)}

__all__ = [
    "BROWSER_USE",
    "COMPUTER_USE",
    "MOBILE_USE",
    "SIM_USE",
    "TABLES",
    "ParsedAction",
    "Verb",
    "VerbTable",
    "parse_action",
]
