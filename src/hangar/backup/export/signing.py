"""Signed export downloads: a URL that fetches one workspace's export for one person, for a few minutes.

The URL carries ``token=v1.<payload>.<mac>`` (base64url parts), never a key:

    payload = {"w": "<workspace id>", "u": "<user id>", "exp": <unix seconds>}
    mac     = HMAC-SHA256(export key, "v1." + payload part)

The key lives only in the secrets file (``workspaces.exportKey``), made on first use. A token proves only that
``workspaces.export`` was allowed to that person a moment ago: the download checks their authority again, from
the database, before a byte of the workspace is sent (``routes``).
"""

from __future__ import annotations

from dataclasses import dataclass

from hangar.core.clock import Clock
from hangar.core.secrets import Secrets
from hangar.core.signed_tokens import SignedTokens
from hangar.errors import Forbidden

EXPORT_KEY = "workspaces.exportKey"
TTL_S = 10 * 60


@dataclass(frozen=True)
class ExportGrant:
    workspace_id: str
    user_id: str
    expires_at: int


class ExportSigner:
    def __init__(self, secrets_file: Secrets, clock: Clock) -> None:
        self._tokens = SignedTokens(
            secrets_file,
            EXPORT_KEY,
            clock,
            what="the export URL's signature",
            expired="the export URL has expired; export again for a new one",
        )

    def mint(self, workspace_id: str, user_id: str, ttl_s: int = TTL_S) -> tuple[str, int]:
        """A token for one export of ``workspace_id`` by ``user_id``, with its expiry (unix seconds)."""
        return self._tokens.mint({"w": workspace_id, "u": user_id}, ttl_s)

    def verify(self, token: str | None) -> ExportGrant:
        """What ``token`` grants; ``Forbidden`` saying why for anything that is not a live token of ours."""
        if not token:
            raise Forbidden("an export download needs the signed URL workspaces.export answered")
        fields, exp = self._tokens.open(token, ("w", "u"))
        return ExportGrant(fields["w"], fields["u"], exp)
