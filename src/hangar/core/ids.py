"""Identifiers and opaque tokens."""

from __future__ import annotations

import hashlib
import re
import secrets
import uuid

_ID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def new_id() -> str:
    """A UUID v4 string: the id of every stored record."""
    return str(uuid.uuid4())


def is_id(text: object) -> bool:
    """Whether ``text`` has the shape of a record id (``new_id``): what may name a folder after it."""
    return isinstance(text, str) and _ID.match(text) is not None


def new_token(prefix: str = "hgr_") -> str:
    """An opaque credential with 256 bits of randomness."""
    return prefix + secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    """How a credential is stored: the SHA-256 of a high-entropy token needs no slow KDF."""
    return hashlib.sha256(token.encode()).hexdigest()


def sha256_hex(data: bytes | str) -> str:
    raw = data.encode() if isinstance(data, str) else data
    return hashlib.sha256(raw).hexdigest()
