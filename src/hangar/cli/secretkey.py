"""``hangar admin secret-key rotate``: re-seal the secrets an install on PostgreSQL keeps in its database under a
new installation key (``hangar.core.sealed``)."""

from __future__ import annotations

import asyncio

import typer

from hangar.cli.root import DatabaseUrlOpt, DataDirOpt, command_settings

secret_key_app = typer.Typer(help="The installation's secret key (installs on PostgreSQL).", no_args_is_help=True)


@secret_key_app.command("rotate")
def rotate(data_dir: DataDirOpt = None, database_url: DatabaseUrlOpt = None) -> None:
    """Re-seal every secret in the database under a new key, in one transaction, and write the new key file.
    Then copy the new file to every other host serving this database: until then they refuse to read secrets."""
    from hangar.core.part import kernel_part
    from hangar.server.context_factory import open_databases, sealed_secrets

    settings = command_settings(
        data_dir, database_url, needs_files="hangar admin secret-key rotate writes the key file"
    )

    async def run() -> tuple[int, str]:
        async with open_databases(settings, [kernel_part()]) as dbs:
            sealed = sealed_secrets(settings, dbs)
            if sealed is None:
                typer.echo(
                    "this install keeps its records in SQLite and its secrets in the data directory's secrets.json: "
                    "there is no sealed secret to rotate (the key seals the secrets of an install on PostgreSQL)",
                    err=True,
                )
                raise typer.Exit(1)
            return await asyncio.to_thread(sealed.rotate), str(sealed.key_path)

    count, path = asyncio.run(run())
    typer.echo(
        f"re-sealed {count} values under a new key, written to {path}; copy that file to every other host serving "
        "this database now (as its <dataDir>/secret-key, or the file HANGAR_SECRET_KEY_FILE names): until then they "
        "refuse to read or write secrets"
    )
