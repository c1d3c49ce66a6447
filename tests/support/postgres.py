"""A throwaway PostgreSQL cluster for tests: Debian's server binaries, a temporary directory, a Unix socket.

One cluster serves a whole test session (started by the first test that asks for it, see ``pg_cluster`` in
tests/conftest.py); each test gets a fresh database of its own, created from ``template0`` and dropped after.

PostgreSQL refuses to run as root, and the suite runs as root in CI: the cluster then runs as ``nobody``
(``setpriv`` switches the user and execs the server directly, so the server is the fixture's own child and gets
SIGKILL when the test process dies). It listens on a Unix socket in its directory only (no TCP port to race
for), trusts the suite's superuser on it (the directory is the boundary: 0700, owned by the cluster's user) and
runs without fsync, since nothing in it outlives the session. Every other role signs in with a password
(``login_role``), so tests see how PostgreSQL refuses a wrong one.

Missing binaries FAIL the tests that need them: PostgreSQL is an engine Hangar supports, and a machine without
it must not pass its tests by skipping them.
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg

SUPERUSER = "hangar"
_RUN_AS = "nobody"
_START_TIMEOUT_S = 60.0
_INSTALL_HINT = (
    "PostgreSQL's server binaries (initdb, postgres) are not installed: `make apt-deps` (the Debian packages "
    "`make test` installs first) adds Debian's `postgresql` package"
)


class PostgresMissing(RuntimeError):
    """The PostgreSQL server binaries are not on this machine."""


def server_bindir(base: Path = Path("/usr/lib/postgresql")) -> Path:
    """The directory of Debian's newest PostgreSQL server binaries (``<base>/<major>/bin``)."""
    found: list[tuple[int, Path]] = []
    for candidate in base.glob("*/bin"):
        if (candidate / "initdb").is_file() and (candidate / "postgres").is_file() and candidate.parent.name.isdigit():
            found.append((int(candidate.parent.name), candidate))
    if not found:
        raise PostgresMissing(_INSTALL_HINT)
    return max(found)[1]


def _as_cluster_user(argv: list[str]) -> list[str]:
    """``argv`` run as the unprivileged cluster user when this process is root (PostgreSQL refuses root)."""
    if os.geteuid() != 0:
        return argv
    user = pwd.getpwnam(_RUN_AS)
    return ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups", "--pdeathsig=KILL", *argv]


def _launch(bindir: Path, root: Path) -> subprocess.Popen[bytes]:
    """The cluster's server on its data directory in ``root``, listening on a socket there only."""
    with open(root / "server.log", "ab") as log:  # the server keeps its own descriptor
        return subprocess.Popen(
            _as_cluster_user(
                [
                    str(bindir / "postgres"),
                    "-D",
                    str(root / "data"),
                    "-k",
                    str(root),
                    "-c",
                    "listen_addresses=",
                    # Nothing here outlives the session: durability is not worth its cost.
                    "-c",
                    "fsync=off",
                    "-c",
                    "synchronous_commit=off",
                    "-c",
                    "full_page_writes=off",
                    "-c",
                    "max_connections=200",
                ]
            ),
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=root,
        )


class PostgresCluster:
    """One running cluster; ``database()`` hands out fresh databases on it."""

    def __init__(self, root: Path, process: subprocess.Popen[bytes], started_in_s: float) -> None:
        self.root = root
        self.socket_dir = root
        self.started_in_s = started_in_s
        self._process = process

    @classmethod
    def start(cls) -> PostgresCluster:
        bindir = server_bindir()
        began = time.monotonic()
        root = Path(tempfile.mkdtemp(prefix="hangar-pg-"))
        try:
            if os.geteuid() == 0:
                user = pwd.getpwnam(_RUN_AS)
                os.chown(root, user.pw_uid, user.pw_gid)
            data = root / "data"
            init = subprocess.run(
                _as_cluster_user(
                    [
                        str(bindir / "initdb"),
                        "--pgdata",
                        str(data),
                        "--username",
                        SUPERUSER,
                        "--auth=trust",
                        "--encoding=UTF8",
                        "--no-locale",
                        "--no-sync",
                    ]
                ),
                capture_output=True,
                cwd=root,
                timeout=120,
            )
            if init.returncode != 0:
                raise RuntimeError(f"initdb failed: {init.stderr.decode(errors='replace')[-2000:]}")
            hba = data / "pg_hba.conf"
            hba.write_text(f"local all {SUPERUSER} trust\nlocal all all scram-sha-256\n")
            if os.geteuid() == 0:
                os.chown(hba, user.pw_uid, user.pw_gid)
            cluster = cls(root, _launch(bindir, root), 0.0)
            cluster._wait_ready()
            cluster.started_in_s = time.monotonic() - began
            return cluster
        except BaseException:
            shutil.rmtree(root, ignore_errors=True)
            raise

    def halt(self) -> None:
        """Stop the server and keep its data (``resume`` starts it again on the same socket): the database going
        away under the processes using it."""
        if self._process.poll() is None:
            self._process.send_signal(2)
            self._process.wait(timeout=30)

    def resume(self) -> None:
        """Start the server ``halt`` stopped, with its databases as they were."""
        if self._process.poll() is None:
            return
        self._process = _launch(server_bindir(), self.root)
        self._wait_ready()

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + _START_TIMEOUT_S
        while True:
            if self._process.poll() is not None:
                raise RuntimeError(f"postgres exited with {self._process.returncode}: {self._log_tail()}")
            try:
                with self._admin():
                    return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"postgres did not accept connections: {self._log_tail()}") from None
                time.sleep(0.05)

    def _log_tail(self) -> str:
        try:
            return (self.root / "server.log").read_text(errors="replace")[-2000:]
        except OSError:
            return "(no log)"

    def _admin(self) -> psycopg.Connection[tuple[object, ...]]:
        return psycopg.connect(self.dsn("postgres"), autocommit=True, connect_timeout=5)

    def dsn(self, dbname: str) -> str:
        """A libpq connection string for ``dbname``."""
        return f"host={self.socket_dir} user={SUPERUSER} dbname={dbname}"

    def url(self, dbname: str) -> str:
        """The SQLAlchemy URL of ``dbname`` (psycopg 3)."""
        return f"postgresql+psycopg://{SUPERUSER}@/{dbname}?host={self.socket_dir}"

    def login_role(self, dbname: str) -> tuple[str, str]:
        """A new role that signs in with a password and owns ``dbname`` (its name and password). Roles are the
        cluster's: they go with it at the end of the session."""
        name, password = f"r_{secrets.token_hex(6)}", secrets.token_urlsafe(18)
        with self._admin() as conn:
            conn.execute(f"CREATE ROLE \"{name}\" LOGIN PASSWORD '{password}'")
            conn.execute(f'ALTER DATABASE "{dbname}" OWNER TO "{name}"')
        return name, password

    @contextmanager
    def database(self) -> Iterator[str]:
        """A new empty database (its name), dropped when the block ends."""
        name = f"t_{secrets.token_hex(6)}"
        with self._admin() as conn:
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE template0')
        try:
            yield name
        finally:
            with self._admin() as conn:
                # Connections a test leaked (an engine it did not dispose) must not keep the database alive.
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def stop(self) -> None:
        if self._process.poll() is None:
            # SIGINT: PostgreSQL's fast shutdown (disconnects clients, no checkpoint wait worth having here).
            self._process.send_signal(2)
            try:
                self._process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        shutil.rmtree(self.root, ignore_errors=True)
