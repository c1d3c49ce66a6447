"""``hangar rig-host`` (run rigs for servers on this machine, dialling out to them) and ``hangar admin
rig-host-credential`` (mint, list, revoke the credentials rig hosts use). See ``hangar.rigs.hosts``."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any
from urllib.parse import urlsplit

import typer

from hangar.cli.hostcreds import NameOpt, ToOpt, credential_app, loopback, read_credential, refuse
from hangar.cli.root import DatabaseUrlOpt, DataDirOpt, settings_from

if TYPE_CHECKING:
    from hangar.config import Settings
    from hangar.core.hostcreds import CredentialKind
    from hangar.core.part import Part

CREDENTIAL_VARIABLE = "HANGAR_RIG_HOST_CREDENTIAL"
DEFAULT_BUDGET_MB = 12 * 1024  # the rig host's --memory-budget, and a credential's --max-memory-budget


def _kind() -> CredentialKind:
    from hangar.rigs.hosts.creds import KIND

    return KIND


def _parts() -> list[Part]:
    import dataclasses

    from hangar.identity.part import IDENTITY_PART
    from hangar.rigs.part import RIGS_PART

    # The rigs part's tables only: nothing of it starts in a command.
    return [IDENTITY_PART, dataclasses.replace(RIGS_PART, ops=(), routes=(), start=None, stop=None)]


rig_host_credential_app = credential_app(
    help_text="Credentials hangar rig-host processes run rigs for this server with.",
    kind=_kind,
    parts=_parts,
    revoke_says="its rig host is refused at once, and the rigs it runs fail.",
    create=False,
)


@rig_host_credential_app.command("create")
def create_cmd(
    name: NameOpt,
    max_memory_budget: Annotated[
        int,
        typer.Option(
            "--max-memory-budget",
            metavar="MB",
            min=512,
            max=1024 * 1024,
            help="The most memory (MB) its rig host is counted as having: a host saying more is given this.",
        ),
    ] = DEFAULT_BUDGET_MB,
    workspace: Annotated[
        list[str] | None,
        typer.Option(
            "--workspace",
            metavar="ID",
            help="A workspace (id) whose rigs its host may run; repeat it. None: every workspace.",
        ),
    ] = None,
    to: ToOpt = None,
    data_dir: DataDirOpt = None,
    database_url: DatabaseUrlOpt = None,
) -> None:
    """Mint a credential: shown (or written) once; the database keeps only its hash, and the limits set here."""
    from hangar.cli.hostcreds import mint_and_show
    from hangar.core.context import AppContext
    from hangar.identity import IdentityService
    from hangar.rigs.hosts.creds import limits

    async def limits_of(ctx: AppContext) -> dict[str, Any]:
        known = await ctx.service(IdentityService).list_workspace_ids()
        return limits(max_memory_budget, workspace or [], known)

    settings = settings_from(data_dir=data_dir, database_url=database_url)
    mint_and_show(settings, _kind(), _parts, name, to, limits_of)


def rig_host(
    server: Annotated[
        list[str],
        typer.Option("--server", help="The server's URL (http[s]://host:port); repeat it for each server."),
    ],
    credential_file: Annotated[
        Path | None,
        typer.Option(
            "--credential-file",
            help=f"A file (0600) holding the rig host credential (default ${CREDENTIAL_VARIABLE}).",
        ),
    ] = None,
    data_dir: DataDirOpt = None,
    memory_budget: Annotated[
        int,
        typer.Option(
            "--memory-budget", min=512, max=1024 * 1024, help="MB of memory the rigs of this host may hold, in all."
        ),
    ] = DEFAULT_BUDGET_MB,
) -> None:
    """Run rigs for the servers on this machine (enclosures, their homes under the data directory): dials out to
    each server, so it needs no inbound port. Runs until stopped (SIGINT, SIGTERM), or exits 1 when a server
    refuses its credential."""
    for url in server:
        if not url.startswith(("http://", "https://")) or len(url) > 2000:
            raise refuse(f"--server must be an http:// or https:// URL of a hangar server, not {url[:100]!r}")
        if url.startswith("http://") and not loopback(urlsplit(url).hostname or ""):
            # The credential travels in the connection's headers: in clear text it is anyone's on the way.
            raise refuse(
                f"--server {url[:100]} is plain http on another host: the rig host credential would cross the network "
                "in clear text; give its https:// address (plain http is accepted for this machine's own addresses)"
            )
    settings = settings_from(data_dir=data_dir)
    text = read_credential(credential_file, CREDENTIAL_VARIABLE, "rig host credential", "hangar rig-host")
    from hangar.server.logs import configure_server_log

    configure_server_log(settings.log_format)
    from hangar.rigs.hosts.agent import CredentialRefused

    try:
        asyncio.run(_host(settings, server, text, memory_budget))
    except KeyboardInterrupt:
        pass
    except CredentialRefused as exc:
        import logging

        logging.getLogger("hangar.rigs.hosts.agent").error("rig host: refused by the server: %s; stopping", exc)
        raise refuse(f"hangar rig-host: refused by the server: {exc}") from None


async def _host(settings: Settings, servers: list[str], credential: str, budget_mb: int) -> None:
    import logging
    import signal

    from hangar.rigs.backends.enclosure import EnclosureBackend
    from hangar.rigs.hosts.agent import RigHostAgent

    settings.data_dir.mkdir(parents=True, exist_ok=True)
    backend = EnclosureBackend(
        settings.data_dir / "rigs", packs_root=settings.packs_root, apt_root=settings.rig_apt_root
    )
    reason = backend.unavailable_reason()
    if reason is not None:
        from hangar.errors import Unavailable

        raise Unavailable(f"this machine cannot run rigs: {reason}")
    agent = RigHostAgent(servers, credential, settings.data_dir, budget_mb, backend)
    task = asyncio.create_task(agent.run())
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, task.cancel)
    logging.getLogger("hangar.rigs.hosts.agent").warning(
        "rig host started for %s with a budget of %d MB", ", ".join(servers), budget_mb
    )
    with contextlib.suppress(asyncio.CancelledError):
        await task
