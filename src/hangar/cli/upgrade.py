"""``hangar admin migrate``: bring every database of a data directory to this version's schema, then exit.

``hangar serve`` migrates each database as it opens it (the server's at start, a workspace's on first use); this
command does all of them at once, so an upgrade can be finished, and any refusal seen, before the server starts.
Each database is migrated in one transaction: a kill at any point leaves it at its old revisions or at its new
head, never between, and the next run (or start) finishes (``hangar.core.migrating``)."""

from __future__ import annotations

import asyncio

import typer

import hangar
from hangar.cli.root import DatabaseUrlOpt, DataDirOpt, command_settings


def migrate(data_dir: DataDirOpt = None, database_url: DatabaseUrlOpt = None) -> None:
    """Migrate the server database and every workspace's database to this Hangar's schema, then exit.

    A folder that holds no install, a database a newer Hangar migrated, or a damaged one, is refused in one
    sentence (exit 1)."""
    import sqlalchemy as sa  # here: the command line starts without the database libraries

    from hangar.core.datadir import DataDir
    from hangar.core.dblocation import URL_FILE
    from hangar.identity.tables import workspaces
    from hangar.server.context_factory import open_databases
    from hangar.server.parts import all_parts

    settings = command_settings(data_dir, database_url)
    root = settings.data_dir
    if settings.given_database_url is None and not (DataDir(root).server_db.exists() or (root / URL_FILE).exists()):
        # Migrating a mistyped path would make a new, empty install there instead.
        typer.echo(
            f"hangar: {root} holds no Hangar data directory (no server.db, no {URL_FILE}): nothing to migrate", err=True
        )
        raise typer.Exit(1)

    async def run() -> int:
        async with open_databases(settings, all_parts()) as dbs:
            async with dbs.server.connect() as conn:
                ids = list((await conn.execute(sa.select(workspaces.c.id).order_by(workspaces.c.id))).scalars())
            for workspace_id in ids:
                await dbs.workspace(workspace_id)
        return len(ids)

    count = asyncio.run(run())
    typer.echo(f"migrated the server database and {count} workspace database(s) to Hangar {hangar.__version__}")
