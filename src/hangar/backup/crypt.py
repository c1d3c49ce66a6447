"""A backup's optional encryption: a passphrase, stretched by scrypt into an AES-256-GCM key, seals the archive in
chunks.

Why this construction: ``cryptography`` (PyCA, already a dependency) provides both pieces; scrypt makes each guess
of the passphrase cost about half a second and 128 MiB, and GCM authenticates every byte. The archive is sealed in
chunks of 1 MiB so neither side holds a backup in memory; each chunk's nonce is the file's random prefix, the
chunk's number and a flag marking the last chunk (the STREAM construction), so chunks cannot be reordered, dropped
or cut after: a file cut short lacks its flagged last chunk and is refused as truncated. The header (format,
scrypt cost, salt, nonce prefix) is bound to every chunk as associated data, and carries a check value (an empty
message sealed under a nonce no chunk uses) so a wrong passphrase is told apart from a damaged chunk.

Layout: ``MAGIC`` (8 bytes), log2 N, r, p (1 byte each), salt (16), nonce prefix (7), check (16); then chunks,
each a 4-byte big-endian length and that many bytes of sealed data (plain data plus the 16-byte tag).
"""

from __future__ import annotations

import functools
import os
import struct
from typing import BinaryIO

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

MAGIC = b"HGRBKE1\n"
CHUNK = 1 << 20
_TAG = 16
_LOG_N, _R, _P = 17, 8, 1
_HEADER = struct.Struct(">8sBBB16s7s")
_CHECK_NONCE = b"\xff" * 12
# The passphrase's bounds, in bytes of UTF-8.
MIN_PASSPHRASE = 8
MAX_PASSPHRASE = 1024


class Damaged(Exception):
    """The encrypted stream is damaged or cut short (the message says which)."""


class WrongPassphrase(Exception):
    """The passphrase does not open this backup."""


def check_passphrase(passphrase: str, where: str) -> bytes:
    """``passphrase`` as bytes, or ``ValueError`` naming ``where`` it came from when it is out of bounds."""
    data = passphrase.encode()
    if len(data) < MIN_PASSPHRASE:
        raise ValueError(f"the passphrase from {where} is shorter than {MIN_PASSPHRASE} characters")
    if len(data) > MAX_PASSPHRASE:
        raise ValueError(f"the passphrase from {where} is longer than {MAX_PASSPHRASE} bytes")
    return data


def _key(passphrase: bytes, log_n: int, r: int, p: int, salt: bytes) -> AESGCM:
    return AESGCM(Scrypt(salt=salt, length=32, n=1 << log_n, r=r, p=p).derive(passphrase))


@functools.lru_cache(maxsize=1)
def _opening_key(passphrase: bytes, log_n: int, r: int, p: int, salt: bytes) -> AESGCM:
    """The key of the backup being read: a restore reads its file twice (checked whole, then unpacked) and derives
    it once. One entry: only the last backup's key is kept."""
    return _key(passphrase, log_n, r, p, salt)


def _nonce(prefix: bytes, index: int, last: bool) -> bytes:
    return prefix + struct.pack(">IB", index, 1 if last else 0)


class SealingWriter:
    """A write-only stream that seals what it is given into ``out``; ``close`` seals the last chunk (it does not
    close ``out``)."""

    def __init__(self, out: BinaryIO, passphrase: bytes) -> None:
        salt, self._prefix = os.urandom(16), os.urandom(7)
        self._aead = _key(passphrase, _LOG_N, _R, _P, salt)
        self._header = _HEADER.pack(MAGIC, _LOG_N, _R, _P, salt, self._prefix)
        out.write(self._header + self._aead.encrypt(_CHECK_NONCE, b"", self._header))
        self._out = out
        self._buffer = bytearray()
        self._index = 0
        self.closed = False

    def write(self, data: bytes) -> int:
        self._buffer += data
        if len(self._buffer) > CHUNK:  # strictly more: the last chunk is sealed at close, never empty-handed
            view = memoryview(self._buffer)
            at = 0
            while len(self._buffer) - at > CHUNK:
                self._seal(bytes(view[at : at + CHUNK]), last=False)
                at += CHUNK
            view.release()
            del self._buffer[:at]
        return len(data)

    def _seal(self, plain: bytes, *, last: bool) -> None:
        sealed = self._aead.encrypt(_nonce(self._prefix, self._index, last), plain, self._header)
        self._out.write(struct.pack(">I", len(sealed)) + sealed)
        self._index += 1

    def close(self) -> None:
        if not self.closed:
            self._seal(bytes(self._buffer), last=True)
            self._buffer.clear()
            self.closed = True


def is_sealed(head: bytes) -> bool:
    return head.startswith(MAGIC)


class OpeningReader:
    """A read-only stream of what a ``SealingWriter`` sealed into ``source``. ``WrongPassphrase`` at once when the
    passphrase does not open it; ``Damaged`` when a chunk fails its tag or the stream ends before its last chunk."""

    def __init__(self, source: BinaryIO, passphrase: bytes) -> None:
        header = source.read(_HEADER.size)
        if len(header) < _HEADER.size:
            raise Damaged("the backup is truncated inside its header")
        magic, log_n, r, p, salt, self._prefix = _HEADER.unpack(header)
        if magic != MAGIC:
            raise Damaged("the backup's encryption header is damaged")
        # Only the cost this version writes: the header is read before the passphrase is checked, so a cost taken
        # from it would let a crafted file make the key's derivation take gigabytes of memory.
        if (log_n, r, p) != (_LOG_N, _R, _P):
            raise Damaged(
                f"the backup's encryption cost (scrypt N=2^{log_n}, r={r}, p={p}) is not the one Hangar writes "
                f"(N=2^{_LOG_N}, r={_R}, p={_P})"
            )
        self._aead = _opening_key(passphrase, log_n, r, p, salt)
        self._header = header
        try:
            self._aead.decrypt(_CHECK_NONCE, source.read(_TAG), header)
        except InvalidTag:
            raise WrongPassphrase("the passphrase does not open this backup") from None
        self._source = source
        self._buffer = b""
        self._at = 0
        self._index = 0
        self._done = False

    def _next_chunk(self) -> None:
        size_bytes = self._source.read(4)
        if len(size_bytes) < 4:
            raise Damaged("the backup is truncated: its last encrypted chunk is missing")
        (size,) = struct.unpack(">I", size_bytes)
        if not _TAG <= size <= CHUNK + _TAG:
            raise Damaged(f"the backup is damaged: encrypted chunk {self._index} has an impossible length")
        sealed = self._source.read(size)
        if len(sealed) < size:
            raise Damaged(f"the backup is truncated inside encrypted chunk {self._index}")
        for last in (False, True):
            try:
                self._buffer = self._aead.decrypt(_nonce(self._prefix, self._index, last), sealed, self._header)
            except InvalidTag:
                continue
            self._at = 0
            self._index += 1
            if last:
                if self._source.read(1):
                    raise Damaged("the backup has data after its last encrypted chunk")
                self._done = True
            return
        raise Damaged(f"the backup is damaged: encrypted chunk {self._index} fails its check")

    def read(self, n: int = -1) -> bytes:
        out = bytearray()
        while n < 0 or len(out) < n:
            left = len(self._buffer) - self._at
            if not left:
                if self._done:
                    break
                self._next_chunk()
                continue
            take = left if n < 0 else min(n - len(out), left)
            out += self._buffer[self._at : self._at + take]
            self._at += take
        return bytes(out)
