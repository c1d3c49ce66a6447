"""Signed lane targets: who may use a rig's file lane or terminal lane, for how long.

A lane URL carries ``sig=<token>``; the token is ``v1.<payload>.<mac>`` with both parts base64url:

    payload = {"t": "<target>", "u": "<user id>", "exp": <unix seconds>}
    mac     = HMAC-SHA256(server lane key, "v1." + payload part)

Targets name the lane, the workspace and the rig: ``rig-files:<workspaceId>/<rigId>`` for the file lane,
``rig-terminal:<workspaceId>/<rigId>`` for the terminal lane, ``rig-watch:<workspaceId>/<rigId>`` for a
watch URL. Each is a target of its own, so a URL minted to watch a machine cannot write files into it. A
token is bound to the user it was minted for; the route also requires that user's device credential and
workspace membership. The key lives only in the secrets file (``rigs.laneKey``), created on first use.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from hangar.core.clock import Clock
from hangar.core.secrets import Secrets
from hangar.core.signed_tokens import SignedTokens
from hangar.errors import Forbidden

Lane = Literal["files", "terminal", "watch"]
LANE_KEY = "rigs.laneKey"
DEFAULT_TTL_S = 15 * 60


def target_of(lane: Lane, ws: str, rig_id: str) -> str:
    return f"rig-{lane}:{ws}/{rig_id}"


@dataclass(frozen=True)
class LaneGrant:
    workspace_id: str
    rig_id: str
    user_id: str
    expires_at: int


class LaneSigner:
    def __init__(self, secrets_file: Secrets, clock: Clock) -> None:
        self._tokens = SignedTokens(
            secrets_file,
            LANE_KEY,
            clock,
            what="the lane signature",
            expired="the lane signature has expired; ask for a new URL",
        )

    def mint(self, lane: Lane, ws: str, rig_id: str, user_id: str, ttl_s: int = DEFAULT_TTL_S) -> tuple[str, int]:
        """A token for ``lane`` of one rig, for one user; returns it with its expiry (unix seconds)."""
        return self._tokens.mint({"t": target_of(lane, ws, rig_id), "u": user_id}, ttl_s)

    def verify(self, token: str | None, lane: Lane, rig_id: str) -> LaneGrant:
        """The grant a token carries for ``lane`` of ``rig_id``; ``Forbidden`` for anything else."""
        if not token:
            raise Forbidden(f"this {lane} lane needs a signed URL (sig=...) minted for you")
        fields, exp = self._tokens.open(token, ("t", "u"))
        target = fields["t"]
        prefix = f"rig-{lane}:"
        if not target.startswith(prefix):
            raise Forbidden(f"this signature is for another lane ({target.split(':', 1)[0]}), not rig-{lane}")
        ws, _, signed_rig = target[len(prefix) :].partition("/")
        if signed_rig != rig_id or not ws:
            raise Forbidden("this signature is for another rig")
        return LaneGrant(ws, rig_id, fields["u"], exp)
