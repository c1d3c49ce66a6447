"""``HANGAR_TEST_DATABASE=postgresql`` (``make test-postgresql``): the integration suite with every record on
PostgreSQL.

Off by default: ``make test`` runs as before, every server on SQLite files in its data directory. On, each test
gets a fresh database on the session's cluster (tests/support/postgres.py) in ``HANGAR_DATABASE_URL``, so every
``hangar`` command it starts as a child, and every ``Settings`` it builds, keeps its records there; each
``running_server`` gets one database per data directory (the first data directory a test names takes the
environment's one, so a child command on it finds the same records; a server restarted on a directory finds its
database again). Tests SQLite is part of by nature carry ``@pytest.mark.sqlite_only`` and are skipped, saying so.
"""

from __future__ import annotations

import os
from contextlib import ExitStack
from pathlib import Path

import pytest

from tests.support.postgres import PostgresCluster

VARIABLE = "HANGAR_TEST_DATABASE"


def enabled() -> bool:
    """True when this session keeps every record on PostgreSQL."""
    value = os.environ.get(VARIABLE, "").strip().lower()
    if value not in ("", "sqlite", "postgresql"):
        raise RuntimeError(f"{VARIABLE} must be sqlite or postgresql, not {value!r}")
    return value == "postgresql"


def chooses_its_own_dialect(request: pytest.FixtureRequest) -> bool:
    """A test that names its databases itself (the ``pg_url``/``pg_cluster`` fixtures, or a module running on
    both dialects through tests/support/dialects.py) runs as written: a URL of this mode's own would contradict
    the one it records in its data directory."""
    if {"pg_url", "pg_cluster"} & set(request.fixturenames):
        return True
    return getattr(request.module, "DIALECTS", None) is not None


class TestDatabases:
    """The databases one test's servers keep their records in, dropped when the test ends."""

    __test__ = False  # not a test class, whatever pytest's name rule says

    def __init__(self, cluster: PostgresCluster) -> None:
        self._cluster = cluster
        self._stack = ExitStack()
        self._by_dir: dict[Path, str] = {}
        self.default_url = self._fresh()
        self._default_taken = False

    def _fresh(self) -> str:
        return self._cluster.url(self._stack.enter_context(self._cluster.database()))

    def url_for(self, data_dir: Path) -> str:
        key = data_dir.resolve()
        if key not in self._by_dir:
            if not self._default_taken:
                self._default_taken = True
                self._by_dir[key] = self.default_url
            else:
                self._by_dir[key] = self._fresh()
        return self._by_dir[key]

    def close(self) -> None:
        self._stack.close()


_current: TestDatabases | None = None


def begin(cluster: PostgresCluster) -> TestDatabases:
    global _current
    _current = TestDatabases(cluster)
    return _current


def end() -> None:
    global _current
    if _current is not None:
        current, _current = _current, None
        current.close()


def database_url_for(data_dir: Path) -> str | None:
    """The database a server on ``data_dir`` keeps its records in under this mode; None when it is off (or
    outside a test)."""
    return _current.url_for(data_dir) if _current is not None else None
