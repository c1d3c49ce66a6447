"""The tests' throwaway PostgreSQL cluster (tests/support/postgres.py)."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from tests.support.postgres import PostgresCluster, PostgresMissing, server_bindir


def test_missing_binaries_name_the_install_step(tmp_path: Path) -> None:
    (tmp_path / "15" / "bin").mkdir(parents=True)  # a major version directory without its server binaries
    with pytest.raises(PostgresMissing, match=r"make apt-deps.*postgresql"):
        server_bindir(tmp_path)


def test_newest_major_is_chosen(tmp_path: Path) -> None:
    for major in ("9", "15", "13"):
        bindir = tmp_path / major / "bin"
        bindir.mkdir(parents=True)
        (bindir / "initdb").touch()
        (bindir / "postgres").touch()
    assert server_bindir(tmp_path) == tmp_path / "15" / "bin"


def test_each_database_is_fresh_and_dropped(pg_cluster: PostgresCluster) -> None:
    with pg_cluster.database() as name:
        with psycopg.connect(pg_cluster.dsn(name)) as conn:
            conn.execute("CREATE TABLE t (x int)")
            conn.commit()
        with pg_cluster.database() as other, psycopg.connect(pg_cluster.dsn(other)) as conn:
            assert conn.execute("SELECT count(*) FROM pg_tables WHERE tablename = 't'").fetchone() == (0,)
    with psycopg.connect(pg_cluster.dsn("postgres")) as conn:
        assert conn.execute("SELECT count(*) FROM pg_database WHERE datname = %s", (name,)).fetchone() == (0,)
