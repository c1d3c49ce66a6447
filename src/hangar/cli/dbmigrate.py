"""``hangar admin migrate-to-postgresql``: copy a SQLite install into PostgreSQL (``hangar.core.dbcopy``);
``hangar admin set-database-url``: point a PostgreSQL install at another database (the one explicit way: a
command given another URL than the recorded one is refused)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

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
    from hangar.core.dbcopy import copy_install
    from hangar.core.dblocation import parse_database_url, redacted
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
    report = copy_install(root, url, [m for p in all_parts() for m in p.migrations])
    for table in report.tables:
        typer.echo(f"{table.schema}.{table.table}: {table.rows} rows, checksum {table.digest[:16]}")
    rate = report.rows / report.seconds if report.seconds > 0 else 0.0
    typer.echo(
        f"copied {report.rows} rows of {len(report.tables)} tables from {report.databases} databases in "
        f"{report.seconds:.2f} s ({rate:.0f} rows/s, the check {report.checked_in_s:.2f} s of it); every table's count "
        "and checksum match"
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
