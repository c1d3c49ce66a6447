"""How ``hangar.core.db`` names PostgreSQL: the URLs it takes and the schema of each workspace."""

from __future__ import annotations

import pytest

from hangar.core.postgresql import postgresql_url, workspace_schema
from hangar.errors import InvalidArgs


def test_postgresql_urls_take_psycopg() -> None:
    assert postgresql_url("postgresql://u@db/hangar").drivername == "postgresql+psycopg"
    assert postgresql_url("postgresql+psycopg://u@/hangar?host=/run/pg").drivername == "postgresql+psycopg"


@pytest.mark.parametrize(
    ("url", "says"),
    [("sqlite:///x.db", "not a PostgreSQL URL"), ("postgresql+asyncpg://u:pw@db/h", "unsupported PostgreSQL driver")],
)
def test_other_urls_are_refused_without_their_password(url: str, says: str) -> None:
    with pytest.raises(ValueError, match=says) as caught:
        postgresql_url(url)
    assert "pw" not in str(caught.value)


def test_workspace_schemas() -> None:
    assert workspace_schema("a" * 60) == "ws_" + "a" * 60  # 63 bytes: PostgreSQL's longest name
    longest = workspace_schema("a" * 64)
    assert longest.startswith("wh_") and len(longest) == 59
    assert workspace_schema("A") != workspace_schema("a")  # ids differ by case, so do schemas
    with pytest.raises(InvalidArgs):
        workspace_schema("../x")
