"""The root of the ``hangar`` command line (CONTRACTS.md section 1) and what its sub-commands share. The commands
themselves are registered on it in ``hangar.cli`` (the package face), one line each."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from pydantic import ValidationError

    from hangar.config import Settings

app = typer.Typer(
    name="hangar",
    help="Hangar: a self-hosted control center where AI agents and people work together.",
    no_args_is_help=True,
    add_completion=False,
)

DataDirOpt = Annotated[
    Path | None, typer.Option("--data-dir", help="Data directory (default $HANGAR_DATA_DIR or ~/.local/share/hangar).")
]


DATABASE_URL_VARIABLE = "HANGAR_DATABASE_URL"
BACKUP_PASSPHRASE_VARIABLE = "HANGAR_BACKUP_PASSPHRASE"  # read into ``Settings.backup_passphrase``
PASSWORD_VARIABLE = "PGPASSWORD"  # PostgreSQL's client library's own variable for the password

DatabaseUrlOpt = Annotated[
    str | None,
    typer.Option(
        "--database-url",
        help="Keep every record in this PostgreSQL database, postgresql://USER@HOST/DATABASE ($HANGAR_DATABASE_URL; "
        "default: the one the data directory records, else SQLite files in the data directory).",
        show_default=False,
    ),
]


def settings_from(**flags: object) -> Settings:
    """Settings from the command's flags and the environment; a bad value is a usage error naming the setting
    (never echoing the value: a database URL may carry a password)."""
    # Imported here: settings stand on pydantic, which `hangar --help` does not need.
    from pydantic import ValidationError

    from hangar.config import Settings
    from hangar.core.dblocation import parse_database_url

    try:
        settings = Settings.from_flags(**flags)
    except ValidationError as exc:
        raise typer.BadParameter(_said(exc)) from None
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from exc
    if settings.given_database_url is not None:
        # A bad URL is ``InvalidArgs``: one line (``hangar.cli.main``), which a usage panel would wrap.
        parse_database_url(settings.given_database_url)
    take_secrets(settings)
    return settings


DATA_DIR_VARIABLE = "HANGAR_DATA_DIR"


def command_settings(data_dir: Path | None, database_url: str | None, *, needs_files: str | None = None) -> Settings:
    """The settings of an ``admin`` or ``pipeline`` command, where a database URL is an alternative to a data
    directory (CONTRACTS.md section 11). Given a URL (the flag or ``$HANGAR_DATABASE_URL``) and no data directory
    (neither ``--data-dir`` nor ``$HANGAR_DATA_DIR``), the command acts on that database alone: no local data
    directory is read, locked or written (the default one included); what the opening of the records needs on disk
    goes to a private temporary directory removed when the command ends. A command that needs a data directory's
    own files says so instead (``needs_files``: what needs them, one clause) and exits 1."""
    url_only = (
        data_dir is None
        and not os.environ.get(DATA_DIR_VARIABLE)
        and bool(database_url or os.environ.get(DATABASE_URL_VARIABLE))
    )
    if not url_only:
        return settings_from(data_dir=data_dir, database_url=database_url)
    if needs_files is not None:
        typer.echo(f"{needs_files}, so it needs --data-dir DIR (a database URL alone is not enough)", err=True)
        raise typer.Exit(1)
    scratch = Path(tempfile.mkdtemp(prefix="hangar-database-only-"))  # 0700
    atexit.register(shutil.rmtree, scratch, ignore_errors=True)
    settings = settings_from(data_dir=scratch, database_url=database_url)
    settings.mark_database_only()
    return settings


def take_secrets(settings: Settings) -> None:
    """Take the database's secrets and the backup passphrase out of this process's environment once read (the
    settings hold them): the processes a command or the server starts (git, image builds, transcoders, host tools)
    never inherit them."""
    os.environ.pop(DATABASE_URL_VARIABLE, None)
    os.environ.pop(BACKUP_PASSPHRASE_VARIABLE, None)
    password = os.environ.pop(PASSWORD_VARIABLE, None)
    if password:
        settings.keep_database_password(password)


def _said(exc: ValidationError) -> str:
    """What pydantic found wrong, one clause per setting, without the values given."""
    clauses = []
    for error in exc.errors():
        message = str(error["msg"]).removeprefix("Value error, ")
        where = ".".join(str(part) for part in error["loc"])
        clauses.append(message if message.startswith("--") or not where else f"{where}: {message}")
    return "; ".join(clauses)
