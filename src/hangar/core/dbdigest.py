"""A table's fingerprint that reads the same on SQLite and PostgreSQL: its row count and a digest of its rows.

Each row is reduced to a canonical text per value, chosen by the column's type (the PostgreSQL column's, which
both sides share after the same migrations): a timestamp as UTC ISO 8601 (SQLite keeps naive UTC text,
PostgreSQL an aware or naive datetime), JSON re-serialised with sorted keys and no spacing (SQLite keeps the text
as written, ``jsonb`` its own normal form; JSON ``null`` stays apart from SQL NULL), a boolean as ``true`` or
``false`` (SQLite keeps 0 and 1), bytes as hex, a float by ``repr``, an integer in decimal. Every value carries a
type tag, so ``1`` and ``'1'`` differ.

The table's digest is the sum of its rows' SHA-256 digests modulo 2**256: independent of row order (the two
engines sort text differently), and, unlike an XOR, it still counts a row that appears twice.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

_MODULUS = 1 << 256
_SEP = b"\x1f"

# PostgreSQL's names of the column types whose values need reading before they compare (``information_schema``).
TIMESTAMP_TYPES = frozenset({"timestamp with time zone", "timestamp without time zone"})
JSON_TYPES = frozenset({"json", "jsonb"})
BOOLEAN_TYPES = frozenset({"boolean"})
FLOAT_TYPES = frozenset({"double precision", "real"})


@dataclass(frozen=True)
class Fingerprint:
    rows: int
    digest: str

    def short(self) -> str:
        return self.digest[:16]


def canonical(value: Any, kind: str) -> bytes:
    """One value as canonical text with a type tag; ``kind`` is the PostgreSQL column type."""
    if value is None:
        return b"N"
    if kind in TIMESTAMP_TYPES:
        moment = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
        moment = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
        return b"T" + moment.isoformat().encode()
    if kind in JSON_TYPES:
        parsed = json.loads(value) if isinstance(value, str | bytes) else value
        return b"J" + json.dumps(parsed, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    if kind in BOOLEAN_TYPES:
        return b"B" + (b"true" if bool(value) else b"false")
    if kind in FLOAT_TYPES:
        return b"F" + repr(float(value)).encode()
    if isinstance(value, bool):
        return b"B" + (b"true" if value else b"false")
    if isinstance(value, int):
        return b"I" + str(value).encode()
    if isinstance(value, float):
        return b"F" + repr(value).encode()
    if isinstance(value, Decimal):
        return b"D" + str(value.normalize()).encode()
    if isinstance(value, bytes | bytearray | memoryview):
        return b"X" + bytes(value).hex().encode()
    return b"S" + str(value).encode()


def fingerprint(rows: Iterable[Sequence[Any]], kinds: Sequence[str]) -> Fingerprint:
    """The count and order-independent digest of ``rows`` whose columns have the PostgreSQL types ``kinds``."""
    total = 0
    count = 0
    for row in rows:
        digest = hashlib.sha256(_SEP.join(canonical(v, k) for v, k in zip(row, kinds, strict=True))).digest()
        total = (total + int.from_bytes(digest, "big")) % _MODULUS
        count += 1
    return Fingerprint(count, f"{total:064x}")
