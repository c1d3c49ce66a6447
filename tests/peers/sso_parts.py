"""The parts an SSO test server runs: the core, identity and SSO (the other parts are not needed)."""

from __future__ import annotations

from hangar.identity.part import IDENTITY_PART
from hangar.oversight import OVERSIGHT_PART
from hangar.sso.part import SSO_PART

SSO_PARTS = [OVERSIGHT_PART, IDENTITY_PART, SSO_PART]
