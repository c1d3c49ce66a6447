"""Rig errors: leaves of the one error tree (``hangar.errors``) with a rig-specific meaning.

Unavailable
└── BackendFailure   the machine behind a rig failed (boot, exec channel, process died)
Refused
└── ControlHeld      a person holds control of the rig, so a mutating verb is refused
"""

from __future__ import annotations

from hangar.errors import Refused, Unavailable


class BackendFailure(Unavailable):
    """A backend error, translated in one place by the manager (``raise BackendFailure(...) from exc``)."""


class ControlHeld(Refused):
    """Someone else holds control of the rig: mutating verbs are refused, observations allowed."""


class DropTooLarge(Refused):
    """A file drop over the lane's limits (files per drop, bytes per file, bytes per drop)."""

    http_status = 413
