"""``hangar worker`` (take pipeline steps from the queue in PostgreSQL) and ``hangar admin worker-credential``
(mint, list, revoke the credentials workers use: ``hangar.cli.hostcreds``). See ``hangar.pipelines.worker``."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from hangar.cli.hostcreds import credential_app, read_credential, refuse
from hangar.cli.root import DatabaseUrlOpt, DataDirOpt, settings_from
from hangar.errors import HangarError

if TYPE_CHECKING:
    from hangar.config import Settings
    from hangar.core.hostcreds import CredentialKind
    from hangar.core.part import Part

CREDENTIAL_VARIABLE = "HANGAR_WORKER_CREDENTIAL"
NEEDS_POSTGRESQL = (
    "hangar worker needs the records in PostgreSQL (give --database-url postgresql://…): "
    "on SQLite the server runs every step itself"
)


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
        raise refuse(NEEDS_POSTGRESQL)
    text = read_credential(credential_file, CREDENTIAL_VARIABLE, "worker credential", "hangar worker")
    from hangar.server.logs import configure_server_log

    configure_server_log(settings.log_format)
    try:
        asyncio.run(_work(settings, text, concurrency))
    except KeyboardInterrupt:
        pass
    except HangarError as exc:
        raise refuse(f"hangar worker: {exc.message}") from None


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


def _worker_kind() -> CredentialKind:
    from hangar.pipelines.workercreds import KIND

    return KIND


def _worker_parts() -> list[Part]:
    from hangar.identity.part import IDENTITY_PART
    from hangar.pipelines.part import PIPELINES_CLI_PART

    return [IDENTITY_PART, PIPELINES_CLI_PART]


def _needs_postgresql(settings: Settings) -> None:
    if not _on_postgresql(settings):
        raise refuse("worker credentials are for hangar worker, which needs the records in PostgreSQL")


worker_credential_app = credential_app(
    help_text="Credentials hangar worker processes take pipeline steps with (PostgreSQL installs).",
    kind=_worker_kind,
    parts=_worker_parts,
    check=_needs_postgresql,
    revoke_says="workers using it take no more steps, and the steps they run stop.",
)
