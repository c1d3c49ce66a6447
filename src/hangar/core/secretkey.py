"""The installation's secret key: what seals the secrets an install on PostgreSQL keeps in its database.

One key per installation, 32 random bytes, kept in ``<dataDir>/secret-key`` (or the file ``HANGAR_SECRET_KEY_FILE``
names): 0600, written atomically, made by the first process that needs it when none is stored yet, and copied
once to each host like a TLS key. The file holds ``hangar-secret-key-v1:`` and the key in base64url.

A value is sealed with AES-256-GCM: ``0x01 || nonce (12 bytes) || ciphertext and tag``, with the value's place
(its scope and name) as associated data, so a sealed value moved to another name or workspace does not open.
The database never holds the key, and no backup carries the file.
"""

from __future__ import annotations

import base64
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from hangar.core.fileio import write_private_atomic

KEY_FILE = "secret-key"
KEY_ENV = "HANGAR_SECRET_KEY_FILE"
_HEADER = "hangar-secret-key-v1:"
_FORMAT = b"\x01"
_NONCE = 12


class KeyFileBroken(Exception):
    """The key file exists but is not a key (its content is never shown)."""


@dataclass(frozen=True)
class SecretKey:
    raw: bytes = field(repr=False)  # never in a log line or a traceback's repr

    @classmethod
    def fresh(cls) -> SecretKey:
        return cls(secrets.token_bytes(32))

    def text(self) -> bytes:
        return f"{_HEADER}{base64.urlsafe_b64encode(self.raw).decode()}\n".encode()

    def seal(self, place: str, value: bytes) -> bytes:
        nonce = os.urandom(_NONCE)
        return _FORMAT + nonce + AESGCM(self.raw).encrypt(nonce, value, place.encode())

    def open(self, place: str, sealed: bytes) -> bytes | None:
        """The value sealed at ``place``; None when it was sealed under another key or another place, or altered."""
        if len(sealed) < 1 + _NONCE + 16 or sealed[:1] != _FORMAT:
            return None
        try:
            return AESGCM(self.raw).decrypt(sealed[1 : 1 + _NONCE], sealed[1 + _NONCE :], place.encode())
        except InvalidTag:
            return None


def read_key(path: Path) -> SecretKey | None:
    """The key in ``path``; None when there is no file. A file wider than 0600 is narrowed first."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise KeyFileBroken(f"{path} cannot be read ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as fh:
        if os.fstat(fh.fileno()).st_mode & 0o077:
            os.fchmod(fh.fileno(), 0o600)
        text = fh.read(4096).decode("ascii", "replace").strip()
    if not text.startswith(_HEADER):
        raise KeyFileBroken(f"{path} is not a Hangar secret key")
    try:
        raw = base64.urlsafe_b64decode(text[len(_HEADER) :])
    except ValueError:
        raise KeyFileBroken(f"{path} is not a Hangar secret key") from None
    if len(raw) != 32:
        raise KeyFileBroken(f"{path} is not a Hangar secret key")
    return SecretKey(raw)


def create_key(path: Path) -> SecretKey:
    """A new key written to ``path``, unless another process wrote one first: then that one (never replaced)."""
    write_private_atomic(path, SecretKey.fresh().text(), keep=True)
    key = read_key(path)
    if key is None:  # pragma: no cover - the file was just linked in place
        raise KeyFileBroken(f"{path} vanished as it was written")
    return key
