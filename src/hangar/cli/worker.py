"""``hangar worker`` (take pipeline steps from the queue in PostgreSQL) and ``hangar admin worker-credential``
(mint, list, revoke the credentials workers use: ``hangar.cli.hostcreds``). See ``hangar.pipelines.worker``."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from hangar.cli.hostcreds import credential_app, loopback, read_credential, refuse
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
    server: Annotated[
        str | None,
        typer.Option(
            "--server",
            help="A server of this database (http(s)://host:port) its agents call the product through "
            "(their product tools and MCP endpoint); without it, agents on this worker have none.",
        ),
    ] = None,
) -> None:
    """Take pipeline steps from the queue in the PostgreSQL database and run them (shell steps in enclosures on
    this host, their working directories under the data directory). Runs until stopped (SIGINT, SIGTERM)."""
    settings = settings_from(data_dir=data_dir, database_url=database_url)
    if not _on_postgresql(settings):
        raise refuse(NEEDS_POSTGRESQL)
    server_url = _server_url(server)
    text = read_credential(credential_file, CREDENTIAL_VARIABLE, "worker credential", "hangar worker")
    from hangar.server.logs import configure_server_log

    configure_server_log(settings.log_format)
    try:
        asyncio.run(_work(settings, text, concurrency, server_url))
    except KeyboardInterrupt:
        pass
    except HangarError as exc:
        raise refuse(f"hangar worker: {exc.message}") from None


def _server_url(given: str | None) -> str | None:
    """The server's origin, or a refusal naming what is wrong with it."""
    if given is None:
        return None
    from urllib.parse import urlsplit

    parts = urlsplit(given.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.path.strip("/") or parts.query:
        raise typer.BadParameter(
            f"{given!r} is not a server's address; give http(s)://HOST[:PORT]", param_hint="--server"
        )
    if parts.scheme == "http" and not loopback(parts.hostname):
        # The worker credential and every agent's token would cross the network in clear.
        raise typer.BadParameter(
            f"{given!r} is plain http to another host; plain http only to a loopback address (localhost, "
            "127.0.0.1, ::1), otherwise give https://HOST[:PORT]",
            param_hint="--server",
        )
    return f"{parts.scheme}://{parts.netloc}"


async def _work(settings: Settings, credential_text: str, concurrency: int, server_url: str | None) -> None:
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
        from hangar.agents.tools.worker_forge_link import worker_shell_forge
        from hangar.agents.tools.worker_link import WorkerLink
        from hangar.pipelines import ShellEnvironment

        link = None
        if server_url is not None:
            from hangar.pipelines.worker_lane import ServerLane

            # The files bodies need that lie with a server (a repo's clone, a meeting's audio) come through it.
            ctx.provide(ServerLane(server_url, credential_text))
            from hangar.rpc.registry import OpRegistry
            from hangar.server.parts import all_parts

            # The ops a server serves, for the agents' tool declarations; the calls run on that server.
            link = ctx.provide(
                WorkerLink(server_url, credential_text, OpRegistry(o for p in all_parts() for o in p.ops))
            )
        # Shell steps naming repoIds get their forge token from that server (a worker without one never claims
        # them; a command agent's turn, whose repositories are the agent's, is refused saying so).
        ctx.provide(worker_shell_forge(link), as_type=ShellEnvironment)
        work = Worker(ctx, engine, credential, concurrency, with_server=server_url is not None)
        task = asyncio.create_task(work.run())
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, task.cancel)
        said = f"worker {work.id} started with credential {credential.name!r} ({credential.id}), {concurrency} at once"
        if server_url is None:
            said += "; without --server it leaves the steps needing a server's files or forge tokens to others"
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
