"""Where a data directory's records live, and who is using the directory.

Records live in SQLite files inside the data directory (the default), or in one PostgreSQL database named by
``--database-url`` / ``$HANGAR_DATABASE_URL``. The data directory stays in use either way: it keeps the files
(the secrets file, repositories, packs, run directories).

Every process that opens a data directory's databases (the server and each ``hangar`` command) must open the
same ones, or the command line and the server would see different records. So the first process given a URL
records it in ``<dataDir>/database-url`` (0600, written atomically) WITHOUT its password, and a process given
no URL opens the recorded one. The password is never written to the data directory: it comes with the URL (the
flag or the variable), or from PostgreSQL's own client sources (``PGPASSWORD``, or the password file
``~/.pgpass`` / ``$PGPASSFILE``, which the client library reads only when it is 0600).

A data directory that holds a SQLite server database and records no URL is a SQLite install: opening it on
PostgreSQL would start a second, empty install beside it, so that is refused until ``hangar admin
migrate-to-postgresql`` has copied it (which records the URL).

Every process holding the data directory's databases open holds a shared lock on ``<dataDir>/in-use.lock``
(released by the kernel however the process ends); copying an install takes it exclusively, so a copy never
starts while a server or a command is using the directory, and nothing starts while one runs.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from hangar.core.dbfailures import recorded_form, shown, without_secrets
from hangar.core.fileio import write_private_atomic
from hangar.errors import Conflict, InvalidArgs, Refused

URL_FILE = "database-url"
IN_USE_LOCK = "in-use.lock"


class DataDirInUse(Conflict):
    """The data directory is in use by another process in a way that excludes this one."""


def redacted(url: str | URL) -> str:
    """``url`` as it may be shown or written: the password left out, the driver named as users write it."""
    return shown(make_url(url) if isinstance(url, str) else url)


def parse_database_url(value: str, *, source: str = "--database-url ($HANGAR_DATABASE_URL)") -> URL:
    """``value`` as a PostgreSQL URL; ``InvalidArgs`` naming what is wrong (the scheme, never the password)."""
    try:
        parsed = make_url(value)
    except (ArgumentError, ValueError):
        raise InvalidArgs(f"{source} is not a URL: give postgresql://USER@HOST/DATABASE", field=source) from None
    backend = parsed.get_backend_name()
    if backend != "postgresql":
        raise InvalidArgs(
            f"{source}: {backend}:// is not a database Hangar keeps its records in; give a postgresql:// URL "
            "(or none, for SQLite files in the data directory)",
            field=source,
        )
    driver = parsed.get_driver_name()
    if "+" in parsed.drivername and driver not in ("psycopg", "psycopg2"):
        raise InvalidArgs(f"{source}: the driver {driver!r} is not supported; use postgresql://", field=source)
    if not parsed.database:
        raise InvalidArgs(f"{source} names no database: give postgresql://USER@HOST/DATABASE", field=source)
    return parsed.set(drivername="postgresql+psycopg")


def recorded_url(root: Path) -> URL | None:
    """The URL (without password) recorded in the data directory at ``root``; None when it records none."""
    text = _read_own(root / URL_FILE)
    return None if text is None else parse_database_url(text.strip(), source=str(root / URL_FILE))


def record_url(root: Path, url: URL) -> None:
    """Record ``url`` (its password left out) as where the data directory's records live."""
    text = f"{recorded_form(url)}\n"
    path = root / URL_FILE
    if _read_own(path) == text:
        return
    write_private_atomic(path, text.encode())


def _read_own(path: Path) -> str | None:
    """The text of the data directory's own file ``path`` (None when absent), never through a symbolic link:
    ``Refused`` when one is planted there."""
    try:
        fd = _open_own(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    with os.fdopen(fd, encoding="utf-8") as fh:
        return fh.read()


def _open_own(path: Path, flags: int, mode: int = 0o600) -> int:
    """``path`` opened with ``flags``, never following a symbolic link at it (``Refused`` naming it)."""
    try:
        return os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
        raise Refused(f"{path} is a symbolic link, which Hangar does not follow: remove it") from None


def database_for(root: Path, given: str | None, *, repoint: bool = False) -> URL | None:
    """The PostgreSQL database the data directory at ``root`` keeps its records in (``given``, else the recorded
    one), or None for its SQLite files. ``Refused`` when ``given`` would open a SQLite install on PostgreSQL, and
    when it names another database than the recorded one (a stale ``$HANGAR_DATABASE_URL`` would otherwise
    migrate that database and point the install at it), unless ``repoint`` (``hangar admin set-database-url``)."""
    recorded = recorded_url(root)
    if given is None:
        return recorded
    url = parse_database_url(given)
    if recorded is None and (root / "server.db").exists():
        raise Refused(
            f"the data directory {root} holds a SQLite install (server.db) and no PostgreSQL database: copy it "
            f"first with hangar admin migrate-to-postgresql --from {root} --database-url URL"
        )
    if recorded is not None and not repoint and without_secrets(url) != without_secrets(recorded):
        raise Refused(
            f"the data directory {root} keeps its records in {shown(recorded)}, not in {shown(url)} (given by "
            "--database-url or $HANGAR_DATABASE_URL): give the recorded database or none, or move the data "
            f"directory to the other one with hangar admin set-database-url --data-dir {root} --database-url URL"
        )
    return url


@contextlib.contextmanager
def in_use(root: Path) -> Iterator[None]:
    """Hold the data directory's shared in-use lock for the block (every process with its databases open).
    ``DataDirInUse`` when a copy of the install holds it exclusively."""
    refusal = (
        f"the data directory {root} is being copied to PostgreSQL (hangar admin migrate-to-postgresql): start "
        "again when the copy has finished"
    )
    with _flocked(root, fcntl.LOCK_SH, refusal):
        yield


@contextlib.contextmanager
def exclusively(root: Path) -> Iterator[None]:
    """Hold the data directory's in-use lock alone for the block; ``DataDirInUse`` when a server or a
    ``hangar`` command has the directory open."""
    refusal = (
        f"the data directory {root} is in use by a running server or hangar command (it holds "
        f"{root / IN_USE_LOCK}): stop it first"
    )
    with _flocked(root, fcntl.LOCK_EX, refusal):
        yield


@contextlib.contextmanager
def _flocked(root: Path, mode: int, refusal: str) -> Iterator[None]:
    """The in-use lock in ``mode``, without waiting (``DataDirInUse(refusal)`` when another holder excludes it);
    the kernel releases it however the process ends."""
    fd = _open_own(root / IN_USE_LOCK, os.O_RDWR | os.O_CREAT)
    try:
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
        except BlockingIOError:
            raise DataDirInUse(refusal) from None
        yield
    finally:
        os.close(fd)
