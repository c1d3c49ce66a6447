"""How many MCP sessions (and listen streams) a credential, a user and a workspace may hold open, and when the
endpoint counts as under pressure. Plain numbers, kept apart from ``sessions`` so the server can hand them to the
door without loading the SDK."""

from __future__ import annotations

from dataclasses import dataclass

from hangar.config import Settings

PRESSURE_SHARE = 0.5  # past this share of the endpoint's bound on sessions, idle sessions expire sooner
PRESSURE_IDLE_S = 120.0  # ... after this many seconds without a request (instead of the SDK's 30 minutes)


@dataclass
class SeatLimits:
    per_credential: int
    per_user: int
    per_workspace: int  # sessions of the credentials limited to one workspace (OAuth grants for it, its agents)

    @classmethod
    def from_settings(cls, settings: Settings) -> SeatLimits:
        return cls(
            per_credential=settings.mcp_sessions_per_credential,
            per_user=settings.mcp_sessions_per_user,
            per_workspace=settings.mcp_sessions_per_workspace,
        )
