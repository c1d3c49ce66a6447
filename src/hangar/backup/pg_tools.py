"""PostgreSQL's own dump tools, as a backup of an install on PostgreSQL runs them (``hangar.backup.pg_source``).

The tools must read what the server writes: ``pg_dump`` of version N dumps servers up to N, and ``pg_restore``
reads the archives of its own version and older. So the server is asked its major version first, and the tool
is taken from ``HANGAR_PG_BINDIR`` when that is set, else from Debian's folder for that version
(``/usr/lib/postgresql/<major>/bin``), else from ``PATH``; one older than the server is refused, naming both
versions, and so is none at all.

The password never reaches a command line, the environment of the tool or a message: it is written to a
password file (0600, in the backup's private scratch folder, removed after) named by ``PGPASSFILE``, and the tool
is given the database as a URL without it. A URL without a password leaves the tool PostgreSQL's own sources
(``~/.pgpass``, ``PGPASSFILE``) as any client has them.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

from sqlalchemy.engine import URL

from hangar.backup.archive import BackupRefused
from hangar.core.dbfailures import recorded_form, secrets_of

DEBIAN_BINDIRS = Path("/usr/lib/postgresql")
_VERSION = re.compile(r"\(PostgreSQL\) (\d+)")
_MESSAGE_MAX = 400  # of a tool's error output, in a refusal


def libpq_url(url: URL) -> str:
    """``url`` as PostgreSQL's client library reads it, without its password."""
    return recorded_form(url)


def password_of(url: URL) -> str | None:
    """The password ``url`` carries, in its userinfo or its query."""
    given = url.password if url.password is not None else url.query.get("password")
    return given if isinstance(given, str) and given else None


def tool_version(path: Path) -> int | None:
    """The major version ``path --version`` says, or None when it does not run or say one."""
    try:
        said = subprocess.run([str(path), "--version"], capture_output=True, text=True, timeout=30, check=False)
    except OSError:
        return None
    found = _VERSION.search(said.stdout)
    return int(found.group(1)) if found else None


def find_tool(name: str, server_major: int, bindir: Path | None) -> Path:
    """The ``name`` (``pg_dump``, ``pg_restore``) to run against a server of major version ``server_major``."""
    if bindir is not None:
        candidates: list[Path] = [bindir / name]
    else:
        on_path = shutil.which(name)
        candidates = [DEBIAN_BINDIRS / str(server_major) / "bin" / name, *([Path(on_path)] if on_path else [])]
    older: list[str] = []
    for candidate in candidates:
        if not candidate.is_file():
            continue
        major = tool_version(candidate)
        if major is not None and major >= server_major:
            return candidate
        older.append(f"{candidate} is {'of no known version' if major is None else f'version {major}'}")
    if older:
        raise BackupRefused(
            f"{name} must be of PostgreSQL {server_major} or newer, the server's version, and {'; '.join(older)}: "
            f"install PostgreSQL {server_major}'s client programs (Debian: postgresql-client-{server_major}), or "
            "name their folder in HANGAR_PG_BINDIR"
        )
    where = f" in {bindir} (HANGAR_PG_BINDIR)" if bindir is not None else ""
    raise BackupRefused(
        f"{name} is not installed{where}: the records are in PostgreSQL, which Hangar backs up and restores with "
        f"PostgreSQL's own {name}; install PostgreSQL {server_major}'s client programs (Debian: "
        f"postgresql-client-{server_major}), or name their folder in HANGAR_PG_BINDIR"
    )


def _escaped(value: str) -> str:
    return value.replace("\\", "\\\\").replace(":", "\\:")


@contextlib.contextmanager
def tool_env(scratch: Path, url: URL) -> Iterator[dict[str, str]]:
    """The environment a tool connecting to ``url`` runs with: this one without Hangar's variables or
    ``PGPASSWORD``, plus, when ``url`` carries a password, a password file holding it (0600, removed after)."""
    env = {k: v for k, v in os.environ.items() if k != "PGPASSWORD" and not k.startswith("HANGAR_")}
    password = password_of(url)
    if password is None:
        yield env
        return
    path = scratch / "pgpass"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        # Any host, port, database and user: the file serves this one connection only.
        out.write(f"*:*:*:*:{_escaped(password)}\n")
    env["PGPASSFILE"] = str(path)
    try:
        yield env
    finally:
        path.unlink(missing_ok=True)


def run_tool(argv: list[str], env: dict[str, str], what: str, url: URL) -> None:
    """Run a tool on ``url``; ``BackupRefused`` with the end of what it said when it fails (it never had the
    password on its command line; masked all the same)."""
    try:
        done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    except OSError as exc:
        raise BackupRefused(f"{what} failed: {argv[0]} cannot run: {exc.strerror}") from None
    if done.returncode != 0:
        said = " ".join(done.stderr.split())[-_MESSAGE_MAX:] or f"exit status {done.returncode}"
        for secret in secrets_of(url):
            said = said.replace(secret, "***")
        raise BackupRefused(f"{what} failed: {said}")
