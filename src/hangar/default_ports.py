"""The ports Hangar listens on by default. Apart from ``hangar.config`` (which stands on pydantic) so that the
command line can show them in its help without loading settings."""

from __future__ import annotations

DEFAULT_PORT = 8420
DEFAULT_SITE_PORT = 8421
