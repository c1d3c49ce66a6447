"""How a database that cannot be used says so: one sentence naming the database and what failed, never its
password.

- ``DatabaseUnreachable``: PostgreSQL could not be connected to (no server at the host or socket, the role or
  password refused, no such database). The client library's own words say which; they are joined into one line
  and the password is taken out of them should it appear.
- ``DatabaseDamaged``: a database whose schema is not what its migration sets produce.
- ``SchemaNewer``: a database a newer Hangar has migrated (a revision this code does not know). Both dialects
  refuse it with the same sentence, naming the revision the database is at and the newest this code knows.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

from sqlalchemy.engine import URL

import hangar
from hangar.errors import Unavailable


class DatabaseDamaged(Unavailable):
    """A database whose schema is not what its migration sets produce (or that cannot be migrated)."""


class SchemaNewer(DatabaseDamaged):
    """A database migrated by a newer Hangar: this code does not know its schema revision."""

    def __init__(self, name: str, migration_set: str, revision: str, head: str) -> None:
        super().__init__(
            f"{name} was migrated by a newer Hangar: its {migration_set} schema is at revision {revision}, which "
            f"this Hangar ({hangar.__version__}) does not know (the newest it knows is {head}); run the Hangar "
            "version that migrated it, or a newer one"
        )
        self.revision = revision
        self.head = head


class DatabaseUnreachable(Unavailable):
    """PostgreSQL could not be connected to."""


def shown(url: URL) -> str:
    """The database as a message names it: its URL as users write it, without the password."""
    plain = url.set(drivername="postgresql") if url.get_backend_name() == "postgresql" else url
    # Unquoted for reading (``?host=/run/postgresql``, not ``%2F``); the password is gone before.
    return unquote(plain._replace(password=None).render_as_string(hide_password=True))


def unreachable(url: URL, exc: BaseException) -> DatabaseUnreachable:
    """The failure to connect to ``url`` as one line: the database, then the client library's reason."""
    reason = str(getattr(exc, "orig", None) or exc)
    if url.password:
        reason = reason.replace(url.password, "***")
    reason = "; ".join(re.sub(r"\s+", " ", line).strip() for line in reason.splitlines() if line.strip())
    reason = re.sub(r"^(connection failed|connection is bad): ", "", reason)
    return DatabaseUnreachable(f"cannot connect to the PostgreSQL database {shown(url)}: {reason[:500]}")
