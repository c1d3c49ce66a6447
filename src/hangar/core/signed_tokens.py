"""Short-lived signed tokens carried in URLs (a rig's lane, a workspace export's download): ``v1.<payload>.<mac>``
with both parts base64url, where

    payload = a JSON object of the caller's fields plus "exp" (unix seconds)
    mac     = HMAC-SHA256(key, "v1." + payload part)

The key lives only in the secrets file under the caller's name, made on first use; the token never carries it.
A token proves only that it was minted here for what its payload says and has not expired: callers check what
it grants against the records again.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
from typing import Any

from hangar.core.clock import Clock
from hangar.core.secrets import Secrets
from hangar.errors import Forbidden

_VERSION = "v1"


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class SignedTokens:
    """Tokens under the secrets file's key ``key_name``; ``what`` names them in refusals (``the lane
    signature``), ``expired`` is the refusal of an expired one."""

    def __init__(self, secrets_file: Secrets, key_name: str, clock: Clock, *, what: str, expired: str) -> None:
        self._secrets = secrets_file
        self._key_name = key_name
        self._clock = clock
        self._what = what
        self._expired = expired

    def _mac(self, signed: str) -> str:
        key = self._secrets.get(self._key_name)
        if key is None:  # made on first use; made by another process meanwhile, that one is the key
            key = self._secrets.set_if_absent(self._key_name, secrets.token_urlsafe(32))
        return _b64(hmac.new(key.encode(), signed.encode(), hashlib.sha256).digest())

    def mint(self, fields: dict[str, str], ttl_s: int) -> tuple[str, int]:
        """A token carrying ``fields``, with its expiry (unix seconds)."""
        exp = int(self._clock.now().timestamp()) + ttl_s
        signed = f"{_VERSION}.{_b64(json.dumps({**fields, 'exp': exp}).encode())}"
        return f"{signed}.{self._mac(signed)}", exp

    def open(self, token: str, names: tuple[str, ...]) -> tuple[dict[str, str], int]:
        """The fields ``names`` of a live token of ours and its expiry; ``Forbidden`` saying why for anything else."""
        malformed = Forbidden(f"{self._what} is malformed")
        parts = token.split(".")
        if len(parts) != 3 or parts[0] != _VERSION:
            raise malformed
        signed = f"{parts[0]}.{parts[1]}"
        if not hmac.compare_digest(self._mac(signed), parts[2]):
            raise Forbidden(f"{self._what} does not verify")
        try:
            payload: Any = json.loads(_unb64(parts[1]))
            fields, exp = {n: str(payload[n]) for n in names}, int(payload["exp"])
        except (ValueError, KeyError, TypeError):
            raise malformed from None
        if exp <= self._clock.now().timestamp():
            raise Forbidden(self._expired)
        return fields, exp
