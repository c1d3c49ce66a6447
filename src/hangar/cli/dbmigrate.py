"""``hangar admin migrate-to-postgresql``: copy a SQLite install into PostgreSQL (``hangar.core.dbcopy``);
``hangar admin set-database-url``: point a PostgreSQL install at another database (the one explicit way: a
command given another URL than the recorded one is refused)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from hangar.cli.root import DatabaseUrlOpt, DataDirOpt, command_settings, settings_from


def migrate_to_postgresql(
    source: Annotated[
        Path, typer.Option("--from", help="The data directory of the SQLite install to copy.", show_default=False)
    ],
    database_url: Annotated[
        str | None,
        typer.Option(
            "--database-url",
            help="The empty PostgreSQL database to copy into, postgresql://USER@HOST/DATABASE ($HANGAR_DATABASE_URL).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Copy an install's records (the server database and every workspace database) into an empty PostgreSQL
    database, check every table's count and checksum on both sides, and point the data directory at it.

    Refused while a server or another command uses the data directory, and when the target holds records."""
    import psycopg

    from hangar.chat.credentials import DIR_NAME as CHAT_DIR
    from hangar.core.datadir import DataDir
    from hangar.core.dbcopy import copy_install
    from hangar.core.dblocation import parse_database_url, redacted
    from hangar.core.sealcopy import SealReport, seal_install
    from hangar.core.secretkey import KEY_ENV, KEY_FILE, create_key, read_key
    from hangar.forges.store import FOLDER as FORGE_DIR
    from hangar.server.parts import all_parts

    settings = settings_from(data_dir=source, database_url=database_url)
    given = settings.given_database_url
    if given is None:
        raise typer.BadParameter("name the PostgreSQL database to copy into", param_hint="--database-url")
    url = parse_database_url(given)
    if url.password is None and settings.database_password is not None:
        url = url.set(password=settings.database_password)
    root = source.expanduser().absolute()
    if not root.is_dir():
        raise typer.BadParameter(f"{root} is not a directory", param_hint="--from")
    key_path = settings.secret_key_file or root / KEY_FILE
    key = read_key(key_path) or create_key(key_path)
    sealed: list[SealReport] = []

    def seal(conn: psycopg.Connection[Any]) -> None:
        sealed.append(seal_install(conn, DataDir(root), key, (CHAT_DIR, FORGE_DIR)))

    report = copy_install(root, url, [m for p in all_parts() for m in p.migrations], then=seal)
    for table in report.tables:
        typer.echo(f"{table.schema}.{table.table}: {table.rows} rows, checksum {table.digest[:16]}")
    rate = report.rows / report.seconds if report.seconds > 0 else 0.0
    typer.echo(
        f"copied {report.rows} rows of {len(report.tables)} tables from {report.databases} databases in "
        f"{report.seconds:.2f} s ({rate:.0f} rows/s, the check {report.checked_in_s:.2f} s of it); every table's count "
        "and checksum match"
    )
    for name in sealed[0].skipped:
        typer.echo(f"not sealed: {name} holds no JSON object (left in place)")
    typer.echo(
        f"sealed {sealed[0].sealed} secrets (the secrets file and the workspaces' secret folders) into the database "
        f"under the key {key_path}, each read back and checked; copy that file to every other host serving this "
        f"database (as <dataDir>/{KEY_FILE}, or name it with {KEY_ENV})"
    )
    typer.echo(
        f"{root} now keeps its records in {redacted(url)} (every hangar command on it opens that database); "
        "its SQLite files are left as they were"
    )


def set_database_url(data_dir: DataDirOpt = None, database_url: DatabaseUrlOpt = None) -> None:
    """Point the data directory at another PostgreSQL database (migrated to this Hangar's schema, and recorded):
    every later command and server on it opens that one. Nothing is copied from the database it recorded before
    (move the data there first, with PostgreSQL's own tools, when it is to keep its records)."""
    import asyncio

    from hangar.core.dblocation import redacted
    from hangar.server.context_factory import open_databases
    from hangar.server.parts import all_parts

    settings = command_settings(
        data_dir, database_url, needs_files="hangar admin set-database-url points a data directory at a database"
    )
    given = settings.given_database_url
    if given is None:
        raise typer.BadParameter("name the PostgreSQL database to keep the records in", param_hint="--database-url")

    async def opened() -> None:
        async with open_databases(settings, all_parts(), repoint=True):
            pass

    asyncio.run(opened())
    typer.echo(f"{settings.data_dir} now keeps its records in {redacted(given)}")
