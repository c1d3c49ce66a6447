# ruff: noqa: E402 - the shared helpers are registered for assert rewriting before they are imported
from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

# The helpers the tests share (conformance cases, test environments, support) say what differed when one of their
# asserts fails, as a test module's do: registered before anything imports them.
pytest.register_assert_rewrite("tests.conformance", "tests.integration", "tests.support")

from tests.support import pg_mode

# The packs the selected tests declare are built before the first of them (tests/support/packs.py).
from tests.support.packs import PACKS, pytest_collection_finish, pytest_runtest_setup  # noqa: F401

# Tests sharing a fixture of module scope run on one worker when the suite runs in parallel (tests/support/parallel.py).
from tests.support.parallel import pytest_collection_modifyitems  # noqa: F401
from tests.support.postgres import PostgresCluster, PostgresMissing

# Tests never touch a user's real data directory.
os.environ.pop("HANGAR_DATA_DIR", None)
os.environ.pop("HANGAR_PUBLIC_URL", None)
os.environ.pop("SERVER_WEB_CLIENT_URL", None)
# Every server a test starts (in this process or as a child) boots rigs, confined shell steps and command
# agents from one set of image packs per machine, built before the tests (tests/support/packs.py); a server a
# test starts never begins a build of its own at start.
os.environ["HANGAR_RIG_PACKS_DIR"] = str(PACKS)
os.environ["HANGAR_PREPARE_PACK"] = "0"
# Nor does it check those packs against the real Debian archives and rebuild them: the tests of keeping packs current
# set the interval themselves, over packs and an archive of their own (test_rigs_pack_refresh.py).
os.environ["HANGAR_PACK_REFRESH_HOURS"] = "0"


@pytest.fixture(autouse=True)
def _detach_test_disks(request: pytest.FixtureRequest) -> Iterator[None]:
    """Disks servers mounted in a test's temporary directory (any server: in this process or a child) are
    detached when the test ends, so thrown-away directories take their loop devices with them."""
    # Taken here, before the test, so the directory outlives this fixture's teardown.
    tmp = request.getfixturevalue("tmp_path") if "tmp_path" in request.fixturenames else None
    yield
    if tmp is not None:
        from tests.support.disks import detach_disks

        detach_disks(tmp)


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[PostgresCluster]:
    """The session's PostgreSQL cluster (tests/support/postgres.py), started by the first test that needs it.

    Fails (never skips) when the server binaries are missing: `make test` installs them."""
    try:
        cluster = PostgresCluster.start()
    except PostgresMissing as exc:
        pytest.fail(str(exc), pytrace=False)
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def pg_url(pg_cluster: PostgresCluster) -> Iterator[str]:
    """The SQLAlchemy URL of a fresh PostgreSQL database of this test's own, dropped after it."""
    with pg_cluster.database() as name:
        yield pg_cluster.url(name)


@pytest.fixture(autouse=True)
def _records_on_postgresql(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Under ``HANGAR_TEST_DATABASE=postgresql`` (tests/support/pg_mode.py), every server and command this test
    starts keeps its records in a fresh PostgreSQL database; a test SQLite is part of is skipped, saying why."""
    if not pg_mode.enabled():
        yield
        return
    marker = request.node.get_closest_marker("sqlite_only")
    if marker is not None:
        reason = marker.args[0] if marker.args else "it works on SQLite's own files"
        pytest.skip(f"HANGAR_TEST_DATABASE=postgresql: SQLite-only test ({reason})")
    if pg_mode.chooses_its_own_dialect(request):
        yield
        return
    databases = pg_mode.begin(request.getfixturevalue("pg_cluster"))
    monkeypatch.setenv("HANGAR_DATABASE_URL", databases.default_url)
    try:
        yield
    finally:
        pg_mode.end()
