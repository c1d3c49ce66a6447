"""Signed export downloads: a URL that fetches one workspace's export for one person, for a few minutes.

The URL carries ``token=v1.<payload>.<mac>`` (base64url parts), never a key:

    payload = {"w": "<workspace id>", "u": "<user id>", "exp": <unix seconds>}
    mac     = HMAC-SHA256(export key, "v1." + payload part)

The key lives only in the secrets file (``workspaces.exportKey``), made on first use. A token proves only that
``workspaces.export`` was allowed to that person a moment ago: the download checks their authority again, from
the database, before a byte of the workspace is sent (``routes``).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
from dataclasses import dataclass

from hangar.core.clock import Clock
from hangar.core.secrets import SecretsFile
from hangar.errors import Forbidden

EXPORT_KEY = "workspaces.exportKey"
TTL_S = 10 * 60
_VERSION = "v1"


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


@dataclass(frozen=True)
class ExportGrant:
    workspace_id: str
    user_id: str
    expires_at: int


class ExportSigner:
    def __init__(self, secrets_file: SecretsFile, clock: Clock) -> None:
        self._secrets = secrets_file
        self._clock = clock

    def _mac(self, signed: str) -> str:
        key = self._secrets.get(EXPORT_KEY)
        if key is None:
            key = secrets.token_urlsafe(32)
            self._secrets.set(EXPORT_KEY, key)
        return _b64(hmac.new(key.encode(), signed.encode(), hashlib.sha256).digest())

    def mint(self, workspace_id: str, user_id: str, ttl_s: int = TTL_S) -> tuple[str, int]:
        """A token for one export of ``workspace_id`` by ``user_id``, with its expiry (unix seconds)."""
        exp = int(self._clock.now().timestamp()) + ttl_s
        signed = f"{_VERSION}.{_b64(json.dumps({'w': workspace_id, 'u': user_id, 'exp': exp}).encode())}"
        return f"{signed}.{self._mac(signed)}", exp

    def verify(self, token: str | None) -> ExportGrant:
        """What ``token`` grants; ``Forbidden`` saying why for anything that is not a live token of ours."""
        if not token:
            raise Forbidden("an export download needs the signed URL workspaces.export answered")
        parts = token.split(".")
        if len(parts) != 3 or parts[0] != _VERSION:
            raise Forbidden("the export URL's signature is malformed")
        signed = f"{parts[0]}.{parts[1]}"
        if not hmac.compare_digest(self._mac(signed), parts[2]):
            raise Forbidden("the export URL's signature does not verify")
        try:
            payload = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
            grant = ExportGrant(str(payload["w"]), str(payload["u"]), int(payload["exp"]))
        except (ValueError, KeyError, TypeError):
            raise Forbidden("the export URL's signature is malformed") from None
        if grant.expires_at <= self._clock.now().timestamp():
            raise Forbidden("the export URL has expired; export again for a new one")
        return grant
