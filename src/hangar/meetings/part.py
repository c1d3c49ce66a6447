"""The meetings part: its tables, the ``meetings.*`` ops, the audio lane and the meeting bodies (diarisation and
speakers, transcript and playback, outcome)."""

from __future__ import annotations

import dataclasses

from hangar.core.part import Part
from hangar.meetings import bodies, diarize_process, membership, outcome_bodies, speakers
from hangar.meetings.notes_template import TEMPLATE_OPS
from hangar.meetings.ops import MEETING_OPS
from hangar.meetings.routes import ROUTES, SETTINGS
from hangar.meetings.tables import MIGRATIONS
from hangar.meetings.worker_lane import ROUTES as WORKER_ROUTES

MEETINGS_PART = Part(
    name="meetings",
    ops=[*MEETING_OPS, *TEMPLATE_OPS],
    routes=[*ROUTES, *WORKER_ROUTES],
    bodies=[*speakers.BODIES, *bodies.BODIES, *outcome_bodies.BODIES],
    migrations=[MIGRATIONS],
    server_settings=[*SETTINGS, *diarize_process.SETTINGS],
    start=membership.start,
    stop=membership.stop,
)

# What a ``hangar worker`` runs of it: the bodies. The removal of a member's voice profiles is a server's work
# (every server hears the event); a worker keeps no subscription.
MEETINGS_WORKER_PART = dataclasses.replace(MEETINGS_PART, start=None, stop=None)
