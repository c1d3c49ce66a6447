"""Retention: events and audit rows older than the ``retention.*`` server settings are deleted by a background
pass over every database, never what is still needed (``hangar.core.retention`` says what is kept); each pass is
recorded and the last one shown (``server.retention``)."""

from __future__ import annotations

from hangar.retention.part import RETENTION_PART, make_retention_part
from hangar.retention.schedule import RetentionSchedule

__all__ = ["RETENTION_PART", "RetentionSchedule", "make_retention_part"]
