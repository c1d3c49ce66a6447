"""``hangar worker`` (take pipeline steps from the queue in PostgreSQL) and ``hangar admin worker-credential``
(mint, list, revoke the credentials workers use). See ``hangar.pipelines.worker``."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from hangar.cli.root import DatabaseUrlOpt, DataDirOpt, settings_from
from hangar.errors import HangarError

if TYPE_CHECKING:
    from contextlib import AbstractAsyncContextManager

    from hangar.config import Settings
    from hangar.core.context import AppContext

CREDENTIAL_VARIABLE = "HANGAR_WORKER_CREDENTIAL"
NEEDS_POSTGRESQL = (
    "hangar worker needs the records in PostgreSQL (give --database-url postgresql://…): "
    "on SQLite the server runs every step itself"
)

worker_credential_app = typer.Typer(
    help="Credentials hangar worker processes take pipeline steps with (PostgreSQL installs).", no_args_is_help=True
)


def _refuse(message: str) -> typer.Exit:
    typer.echo(message, err=True)
    return typer.Exit(1)


def _on_postgresql(settings: Settings) -> bool:
    from hangar.core.dblocation import recorded_url

    return settings.given_database_url is not None or recorded_url(settings.data_dir) is not None


def worker(
    database_url: DatabaseUrlOpt = None,
    credential_file: Annotated[
        Path | None,
        typer.Option(
            "--credential-file",
            help=f"A file (0600) holding the worker credential (default ${CREDENTIAL_VARIABLE}).",
        ),
    ] = None,
    data_dir: DataDirOpt = None,
    concurrency: Annotated[
        int, typer.Option("--concurrency", min=1, max=256, help="How many steps this worker runs at once.")
    ] = 8,
) -> None:
    """Take pipeline steps from the queue in the PostgreSQL database and run them (shell steps in enclosures on
    this host, their working directories under the data directory). Runs until stopped (SIGINT, SIGTERM)."""
    settings = settings_from(data_dir=data_dir, database_url=database_url)
    if not _on_postgresql(settings):
        raise _refuse(NEEDS_POSTGRESQL)
    text = os.environ.pop(CREDENTIAL_VARIABLE, None)
    if credential_file is not None:
        try:
            text = credential_file.read_text().strip()
        except OSError as exc:
            raise _refuse(f"cannot read the worker credential file {credential_file}: {exc.strerror}") from None
    if not text:
        raise _refuse(f"hangar worker needs a worker credential: --credential-file F or ${CREDENTIAL_VARIABLE}")
    from hangar.server.logs import configure_server_log

    configure_server_log(settings.log_format)
    try:
        asyncio.run(_work(settings, text, concurrency))
    except KeyboardInterrupt:
        pass
    except HangarError as exc:
        raise _refuse(f"hangar worker: {exc.message}") from None


async def _work(settings: Settings, credential_text: str, concurrency: int) -> None:
    import logging
    import signal

    from hangar.pipelines.bodies.spec import BodyRegistry
    from hangar.pipelines.engine import PipelineEngine
    from hangar.pipelines.worker import Worker
    from hangar.pipelines.workercreds import verify
    from hangar.server.context_factory import open_context
    from hangar.server.parts import step_bodies, worker_parts

    parts = worker_parts()
    async with open_context(settings, parts=parts) as ctx:
        if not ctx.dbs.on_postgresql:
            raise HangarError(NEEDS_POSTGRESQL)
        credential = await verify(ctx.dbs.server, credential_text)
        engine = PipelineEngine.from_app(ctx, BodyRegistry(step_bodies(parts)))
        work = Worker(ctx, engine, credential, concurrency)
        task = asyncio.create_task(work.run())
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, task.cancel)
        said = f"worker {work.id} started with credential {credential.name!r} ({credential.id}), {concurrency} at once"
        logging.getLogger("hangar.pipelines.worker").warning("%s", said)
        try:
            await task
        except asyncio.CancelledError:
            pass
        finally:
            await engine.aclose()


@worker_credential_app.command("create")
def create_cmd(
    name: Annotated[str, typer.Option("--name", help="What the credential is for (1 to 100 characters).")],
    to: Annotated[
        Path | None, typer.Option("--to", help="Write the credential to this new file (0600) instead of stdout.")
    ] = None,
    data_dir: DataDirOpt = None,
    database_url: DatabaseUrlOpt = None,
) -> None:
    """Mint a worker credential: shown (or written) once; the database keeps only its hash."""
    from hangar.core.fileio import write_private_atomic

    settings = settings_from(data_dir=data_dir, database_url=database_url)
    if not _on_postgresql(settings):
        raise _refuse("worker credentials are for hangar worker, which needs the records in PostgreSQL")

    async def run() -> tuple[str, str]:
        from hangar.pipelines.workercreds import mint

        async with _context(settings) as ctx:
            cred, text = await mint(ctx.dbs.server, name, ctx.clock.now())
            return cred.id, text

    cred_id, text = asyncio.run(run())
    if to is None:
        typer.echo(text)
    else:
        write_private_atomic(to, (text + "\n").encode())
        typer.echo(f"worker credential {cred_id} written to {to}")


@worker_credential_app.command("list")
def list_cmd(data_dir: DataDirOpt = None, database_url: DatabaseUrlOpt = None) -> None:
    """The worker credentials minted: id, name, when, and whether revoked."""
    settings = settings_from(data_dir=data_dir, database_url=database_url)

    async def run() -> list[str]:
        from hangar.pipelines.workercreds import listed

        async with _context(settings) as ctx:
            return [
                f"{c.id}  {c.name}  {c.created_at.isoformat(timespec='seconds')}"
                + (f"  revoked {c.revoked_at.isoformat(timespec='seconds')}" if c.revoked_at else "")
                for c in await listed(ctx.dbs.server)
            ]

    for line in asyncio.run(run()) or ["no worker credential was minted"]:
        typer.echo(line)


@worker_credential_app.command("revoke")
def revoke_cmd(
    credential_id: Annotated[str, typer.Argument(help="The credential's id (hangar admin worker-credential list).")],
    data_dir: DataDirOpt = None,
    database_url: DatabaseUrlOpt = None,
) -> None:
    """Revoke a worker credential: workers using it take no more steps, and the steps they run stop."""
    settings = settings_from(data_dir=data_dir, database_url=database_url)

    async def run() -> str:
        from hangar.pipelines.workercreds import revoke

        async with _context(settings) as ctx:
            return (await revoke(ctx.dbs.server, credential_id, ctx.clock.now())).name

    try:
        name = asyncio.run(run())
    except HangarError as exc:
        raise _refuse(exc.message) from None
    typer.echo(f"worker credential {credential_id} ({name}) is revoked")


def _context(settings: Settings) -> AbstractAsyncContextManager[AppContext]:
    from hangar.identity.part import IDENTITY_PART
    from hangar.pipelines.part import PIPELINES_CLI_PART
    from hangar.server.context_factory import open_context

    return open_context(settings, parts=[IDENTITY_PART, PIPELINES_CLI_PART])
