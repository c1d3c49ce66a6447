"""Column types shared by every part's tables, and the wire form of a timestamp."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

import sqlalchemy as sa
from pydantic import PlainSerializer, WithJsonSchema
from sqlalchemy.engine import Dialect


class UtcDateTime(sa.TypeDecorator[datetime]):
    """A timestamp that is always timezone-aware UTC in Python.

    SQLite keeps no zone, so values are stored as naive UTC and given back with ``UTC`` attached; naive input
    is refused because it is ambiguous. PostgreSQL's column is ``timestamp with time zone`` (what the migrations'
    ``DateTime(timezone=True)`` create there) and is given the aware value, so the session's time zone never
    shifts it.
    """

    impl = sa.DateTime
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> sa.types.TypeEngine[Any]:
        if dialect.name == "sqlite":
            return dialect.type_descriptor(sa.DateTime())
        return dialect.type_descriptor(sa.DateTime(timezone=True))

    def process_bind_param(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if not isinstance(value, datetime):
            raise TypeError(f"expected a datetime, got {type(value).__name__}")
        if value.tzinfo is None:
            raise ValueError("naive datetimes are ambiguous; use an aware UTC datetime")
        utc = value.astimezone(UTC)
        return utc.replace(tzinfo=None) if dialect.name == "sqlite" else utc

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if isinstance(value, str):
            value = datetime.fromisoformat(value)
        assert isinstance(value, datetime)
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def rfc3339(value: datetime) -> str:
    """The one way a timestamp reaches a client: RFC 3339 in UTC with ``Z`` (``2026-01-01T00:05:00Z``, with the
    fraction of a second when there is one). A naive value is one SQLite gave back without its zone: the server
    stores UTC only."""
    aware = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    return aware.isoformat().replace("+00:00", "Z")


def rfc3339_or_none(value: datetime | None) -> str | None:
    return None if value is None else rfc3339(value)


Timestamp = Annotated[
    datetime,
    PlainSerializer(rfc3339, return_type=str),
    WithJsonSchema({"type": "string", "format": "date-time"}),
]
"""A timestamp field of a wire model: a datetime in Python, ``rfc3339`` on the wire."""
