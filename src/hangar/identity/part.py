"""The identity part: users, workspaces, members, devices, pairing."""

from __future__ import annotations

import dataclasses

from hangar.identity.command_part import IDENTITY_COMMAND_PART
from hangar.identity.ops import IDENTITY_OPS
from hangar.identity.routes import IDENTITY_ROUTES

# The part a command opens, with what the server serves of it.
IDENTITY_PART = dataclasses.replace(IDENTITY_COMMAND_PART, ops=IDENTITY_OPS, routes=IDENTITY_ROUTES)
