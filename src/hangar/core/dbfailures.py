"""How a database that cannot be used says so: one sentence naming the database and what failed, never its
password.

- ``DatabaseUnreachable``: PostgreSQL could not be connected to (no server at the host or socket, the role or
  password refused, no such database). The client library's own words say which; they are joined into one line
  and the password is taken out of them should it appear.
- ``DatabaseGone``: the database was reachable and is no longer (it restarted, stopped, or the network to it broke)
  while the server runs: a request answers ``unavailable`` naming the database and the client library's reason
  (``gone``), the work that needs it pauses and resumes by itself once it answers again.
- ``DatabaseDamaged``: a database whose schema is not what its migration sets produce.
- ``SchemaNewer``: a database a newer Hangar has migrated (a revision this code does not know). Both dialects
  refuse it with the same sentence, naming the Hangar version that migrated it (as the database records it) and
  this one, the revision the database is at and the newest this code knows.
"""

from __future__ import annotations

import logging
import re
import sys
import time
from urllib.parse import unquote

import sqlalchemy as sa
from sqlalchemy.engine import URL

import hangar
from hangar.errors import Unavailable


class DatabaseDamaged(Unavailable):
    """A database whose schema is not what its migration sets produce (or that cannot be migrated)."""


class SchemaNewer(DatabaseDamaged):
    """A database migrated by a newer Hangar: this code does not know its schema revision. ``migrated_by`` is the
    version the database records as the last to migrate it (``hangar.core.migrating.RELEASE_TABLE``), when it
    records one other than this version."""

    def __init__(self, name: str, migration_set: str, revision: str, head: str, migrated_by: str | None = None) -> None:
        ours = hangar.__version__
        if migrated_by and migrated_by != ours:
            by, run = f"Hangar {migrated_by}", f"run Hangar {migrated_by} or newer"
        else:
            by, run = "a newer Hangar", "run the Hangar version that migrated it, or a newer one"
        super().__init__(
            f"{name} was migrated by {by}: its {migration_set} schema is at revision {revision}, which this "
            f"Hangar ({ours}) does not know (the newest it knows is {head}); {run}"
        )
        self.revision = revision
        self.head = head
        self.migrated_by = migrated_by


class DatabaseUnreachable(Unavailable):
    """PostgreSQL could not be connected to."""


class DatabaseGone(Unavailable):
    """PostgreSQL stopped answering under a running server (a restart, a stop, the network to it lost)."""


# The connection parameters libpq takes a secret in (a URL may carry them in its query as well as its userinfo).
SECRET_PARAMETERS = frozenset({"password", "sslpassword"})


def without_secrets(url: URL) -> URL:
    """``url`` as it may be shown or recorded: no password (userinfo or query), the driver named as users write
    it. Every place that shows or writes a database URL goes through this."""
    plain = url.set(drivername="postgresql") if url.get_backend_name() == "postgresql" else url
    secret = [key for key in plain.query if key.lower() in SECRET_PARAMETERS]
    return plain._replace(password=None).difference_update_query(secret)


def secrets_of(url: URL) -> list[str]:
    """The secrets ``url`` carries (its password, in the userinfo or the query), to take out of any text."""
    given = [url.password] + [url.query[key] for key in url.query if key.lower() in SECRET_PARAMETERS]
    values = [v for item in given for v in ((item,) if isinstance(item, str) else item or ())]
    return [v for v in values if v]


def first_line_without(exc: BaseException, secrets: list[str], *, limit: int = 300) -> str:
    """The first line of ``exc`` (at most ``limit`` characters) with each of ``secrets`` masked, for a log line."""
    text = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:limit]
    for secret in secrets:
        text = text.replace(secret, "***")
    return text


def recorded_form(url: URL) -> str:
    """``url`` without its secrets, quoted so that it reads back exactly (what a data directory records)."""
    return without_secrets(url).render_as_string(hide_password=False)


def shown(url: URL) -> str:
    """The database as a message names it: its URL as users write it, without the password."""
    # Unquoted for reading (``?host=/run/postgresql``, not ``%2F``): for display only, never read back.
    return unquote(recorded_form(url))


def unreachable(url: URL, exc: BaseException) -> DatabaseUnreachable:
    """The failure to connect to ``url`` as one line: the database, then the client library's reason."""
    reason = str(getattr(exc, "orig", None) or exc)
    for secret in secrets_of(url):
        reason = reason.replace(secret, "***")
    reason = "; ".join(re.sub(r"\s+", " ", line).strip() for line in reason.splitlines() if line.strip())
    reason = re.sub(r"^(connection failed|connection is bad): ", "", reason)
    return DatabaseUnreachable(f"cannot connect to the PostgreSQL database {shown(url)}: {reason[:500]}")


def is_connection_loss(exc: BaseException) -> bool:
    """Whether ``exc`` says the connection to PostgreSQL is gone or cannot be opened (as opposed to a statement
    the database refused): what a pause-and-retry, not a bug report, answers."""
    if isinstance(exc, sa.exc.DBAPIError) and exc.connection_invalidated:
        return True
    # Not imported here: a process that never opened PostgreSQL has no psycopg error to recognise.
    psycopg = sys.modules.get("psycopg")
    if psycopg is None:
        return False
    orig = exc.orig if isinstance(exc, sa.exc.DBAPIError) else exc
    return isinstance(orig, (psycopg.OperationalError, psycopg.InterfaceError))


def gone(url: URL | None, exc: BaseException) -> DatabaseGone | None:
    """``exc`` as the refusal a caller reads when it is the loss of the PostgreSQL database at ``url`` (None when
    it is anything else, or the records are not on PostgreSQL): the database, the reason, never the password."""
    if url is None or not is_connection_loss(exc):
        return None
    reason = first_line_without(getattr(exc, "orig", None) or exc, secrets_of(url), limit=200)
    reason = re.sub(r"^\((\w|\.)+\) ", "", reason)
    return DatabaseGone(
        f"the PostgreSQL database {shown(url)} is not answering ({reason}); the server resumes by itself "
        "when it is back: try again shortly"
    )


class Paused:
    """What a background loop says of the database: one warning when a pass fails for the loss of the connection
    (the loop pauses: it tries again at its next pass), one line when a pass succeeds again, nothing in between.
    Any other failure is the caller's to log as the bug it is."""

    def __init__(self, what: str, logger: logging.Logger) -> None:
        self.what = what
        self._log = logger
        self.since: float | None = None  # when the first failing pass of the current loss failed

    def failed(self, exc: BaseException) -> bool:
        """Whether ``exc`` is the loss of the connection (said once per loss); False: the caller logs it."""
        if not is_connection_loss(exc):
            return False
        if self.since is None:
            self.since = time.monotonic()
            self._log.warning(
                "%s paused: the database is not answering (%s); resuming when it is back",
                self.what,
                first_line_without(getattr(exc, "orig", None) or exc, []),
            )
        return True

    def ok(self) -> None:
        if self.since is not None:
            self._log.warning("%s resumed: the database answers again", self.what)
            self.since = None


class PoolLossLine(logging.Filter):
    """SQLAlchemy's pool logs a connection it could not reset on its return with the whole traceback (``Exception
    during reset or similar``): when PostgreSQL went away, that is the loss every loop already says once, so the
    record becomes one line naming it, with no traceback. Any other failure keeps its traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if exc is not None and is_connection_loss(exc):
            record.msg, record.args = f"{record.getMessage()}: the connection to PostgreSQL was lost", None
            record.exc_info, record.exc_text = None, None
        return True


def quiet_pool_losses(pool: object) -> None:
    """Put ``PoolLossLine`` on the logger of ``pool``'s class (SQLAlchemy names it after the class), once."""
    cls = type(pool)
    logger = logging.getLogger(getattr(cls, "_sqla_logger_namespace", None) or f"{cls.__module__}.{cls.__name__}")
    if not any(isinstance(f, PoolLossLine) for f in logger.filters):
        logger.addFilter(PoolLossLine())
