"""``hangar serve`` and ``hangar site``: the server and the public website on their listeners."""

from __future__ import annotations

import os
import shlex
import socket
import sys
from typing import TYPE_CHECKING, Annotated

import typer

from hangar.cli.root import DatabaseUrlOpt, DataDirOpt, settings_from
from hangar.core.commandline import hangar_command
from hangar.default_ports import DEFAULT_PORT, DEFAULT_SITE_PORT
from hangar.errors import HangarError

TrustedProxyOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--trusted-proxy",
        help="A reverse proxy (address or CIDR network) whose X-Forwarded-For is honoured; repeat for more "
        "($HANGAR_TRUSTED_PROXIES, comma-separated). Default: none.",
    ),
]
MaxConnectionsOpt = Annotated[
    int | None,
    typer.Option(
        "--max-connections",
        help="Connections held at once in total ($HANGAR_MAX_CONNECTIONS; default and ceiling: the descriptor "
        "limit less a reserve).",
    ),
]
PerAddressOpt = Annotated[
    int | None,
    typer.Option(
        "--max-connections-per-address",
        help="Connections held at once from one client address, an IPv6 /64 counting as one "
        "($HANGAR_MAX_CONNECTIONS_PER_ADDRESS; default 256).",
    ),
]
HeadTimeoutOpt = Annotated[
    float | None,
    typer.Option(
        "--request-head-timeout",
        help="Seconds a client may take to send a request head ($HANGAR_REQUEST_HEAD_TIMEOUT; default 10).",
    ),
]
if TYPE_CHECKING:
    from hangar.config import Settings
    from hangar.core.context import AppContext
    from hangar.server.listeners import BackgroundJob


def serve(
    host: Annotated[
        str | None, typer.Option(help="Interface to listen on ($HANGAR_HOST; default 127.0.0.1).", show_default=False)
    ] = None,
    port: Annotated[
        int | None, typer.Option(help=f"Server port ($HANGAR_PORT; default {DEFAULT_PORT}).", show_default=False)
    ] = None,
    data_dir: DataDirOpt = None,
    database_url: DatabaseUrlOpt = None,
    public_url: Annotated[str | None, typer.Option("--public-url", help="Canonical public origin.")] = None,
    internal_url: Annotated[
        str | None,
        typer.Option(
            "--internal-url",
            help="Where the other servers of the same records reach this one ($HANGAR_INTERNAL_URL; default its "
            "own listener): a rig's calls and lanes asked of another server are relayed here.",
            show_default=False,
        ),
    ] = None,
    web_client_url: Annotated[
        str | None, typer.Option("--web-client-url", help="Origin SSO callbacks redirect to ($SERVER_WEB_CLIENT_URL).")
    ] = None,
    site_port: Annotated[
        int | None,
        typer.Option(
            "--site-port", help=f"Website port ($HANGAR_SITE_PORT; default {DEFAULT_SITE_PORT}).", show_default=False
        ),
    ] = None,
    no_site: Annotated[bool, typer.Option("--no-site", help="Do not serve the website.")] = False,
    site_url: Annotated[
        str | None, typer.Option("--site-url", help="Public origin of the website (default: its own listener).")
    ] = None,
    trusted_proxy: TrustedProxyOpt = None,
    trusted_origin: Annotated[
        list[str] | None,
        typer.Option(
            "--trusted-origin",
            help="A further origin an SSO popup may hand a credential to (a web client in development); repeat "
            "for more ($HANGAR_TRUSTED_ORIGINS, comma-separated).",
        ),
    ] = None,
    max_connections: MaxConnectionsOpt = None,
    max_connections_per_address: PerAddressOpt = None,
    request_head_timeout: HeadTimeoutOpt = None,
    prepare_pack: Annotated[
        bool,
        typer.Option(
            "--prepare-pack/--no-prepare-pack",
            envvar="HANGAR_PREPARE_PACK",
            help="When the terminal image pack is missing (the first start), build it in the background.",
        ),
    ] = True,
    log_format: Annotated[
        str | None,
        typer.Option(
            "--log-format",
            help="How the server writes its log: text lines, or json (one object a line, with request ids) "
            "($HANGAR_LOG_FORMAT; default text).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Run the self-hosted server, and the website on its own port unless --no-site."""
    # Imported here: the server and the website are heavy, and other commands start without them (the website
    # only when it is served: it brings the MCP SDK).
    from hangar.cli.signin import first_sign_in_job
    from hangar.server.app import build_server
    from hangar.server.connections import ConnectionGuard, ConnectionLimits
    from hangar.server.listeners import Listener, run_listeners
    from hangar.server.logs import configure_server_log

    # The rigs need to know where the website is (it is on every browser rig's allowlist): pass it on.
    settings = settings_from(
        host=host, port=port, data_dir=data_dir, database_url=database_url, public_url=public_url,
        web_client_url=web_client_url, internal_url=internal_url,
        site_port=site_port, site_url=site_url, trusted_proxies=trusted_proxy or None,
        trusted_origins=trusted_origin or None, max_connections=max_connections,
        max_connections_per_address=max_connections_per_address, request_head_timeout=request_head_timeout,
        log_format=log_format,
    )  # fmt: skip
    try:
        configure_server_log(settings.log_format)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    # A listener flag left out is taken from its variable, else its default, as every other command reads it.
    host, port = settings.host, settings.port
    site_port = settings.site_port if settings.site_port is not None else DEFAULT_SITE_PORT
    # The ports first, before anything starts or is printed: one that cannot be had is the whole answer.
    server_sockets = claim_port("the server", host, port, "--port PORT (make run PORT=PORT)")
    site_fix = "--site-port PORT (make run SITE_PORT=PORT), or serve no website with --no-site"
    site_sockets = None if no_site else claim_port("the website", host, site_port, site_fix)
    database = check_databases(settings)
    # A port chosen by the system (0) is known now: the server's origin and the rigs' allowlist name the real one.
    settings.port = server_sockets[0].getsockname()[1]
    settings.serve_here()
    if no_site:
        settings = settings.model_copy(update={"site_port": None, "site_url": None})
    elif site_sockets is not None:
        settings.site_port = site_port = site_sockets[0].getsockname()[1]
    guard = ConnectionGuard(ConnectionLimits.from_settings(settings))
    ready: list[AppContext] = []
    app = build_server(settings, on_ready=ready)
    listeners = [Listener("server", app, host, settings.port, guard, sockets=server_sockets)]
    if site_sockets is not None:
        from hangar.cli.website import build_site
        from hangar.server.monitoring import SiteRequests

        # Absolute links come from the configured origin, never from a request's Host header: pages are cached
        # publicly, and a shared cache must not hand one host's links to another.
        site_app = SiteRequests(build_site(site_url or local_origin(host, site_port)), app.state.metrics)
        listeners.append(Listener("website", site_app, host, site_port, guard, sockets=site_sockets))
    typer.echo(f"data directory: {settings.data_dir}")
    typer.echo(f"database: {database}")
    background: list[BackgroundJob] = [first_sign_in_job(ready, settings)]
    if (missing := host_readiness()) is not None:
        typer.echo(missing)
    elif prepare_pack and (job := terminal_pack_job(settings, build_pack_command(settings))) is not None:
        background.append(job)
    run_listeners(listeners, background)


def check_databases(settings: Settings) -> str:
    """Open the databases once before anything serves (migrated and checked, as the server opens them): one that
    cannot be used (unreachable, refused, migrated by a newer Hangar, damaged) is one line and exit 1, not a
    failed start in the log. Returns where the records are, as the start lines say it (no password)."""
    import asyncio

    from hangar.core.dblocation import database_for, redacted
    from hangar.server.context_factory import open_databases, sealed_secrets
    from hangar.server.parts import all_parts

    async def opened() -> None:
        async with open_databases(settings, all_parts()) as dbs:
            sealed = sealed_secrets(settings, dbs)
            if sealed is not None:  # its key, made or checked against the database's (one line when it is not)
                await asyncio.to_thread(sealed.key)

    try:
        asyncio.run(opened())
    except HangarError as exc:
        typer.echo(f"the server cannot start: {exc.message}", err=True)
        raise typer.Exit(1) from None
    given = settings.given_database_url
    url = database_for(settings.data_dir, given)
    return "SQLite files in the data directory" if url is None else redacted(url)


def claim_port(who: str, host: str, port: int, fix: str) -> list[socket.socket]:
    """``port`` bound on ``host``; when it cannot be had, one line naming it and what to do, and exit 1."""
    from hangar.server.listeners import PortUnavailable, bind_port

    try:
        return bind_port(host, port)
    except PortUnavailable as exc:
        typer.echo(f"{who} cannot listen: {exc.reason}; {exc.remedy(fix)}", err=True)
        raise typer.Exit(1) from None


def site(
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Website port.")] = DEFAULT_SITE_PORT,
    base_url: Annotated[str | None, typer.Option("--base-url", help="Canonical origin of the site.")] = None,
    trusted_proxy: TrustedProxyOpt = None,
    max_connections: MaxConnectionsOpt = None,
    max_connections_per_address: PerAddressOpt = None,
    request_head_timeout: HeadTimeoutOpt = None,
) -> None:
    """Run the public website alone."""
    from hangar.cli.website import build_site
    from hangar.server.connections import ConnectionGuard, ConnectionLimits
    from hangar.server.listeners import Listener, run_listeners

    settings = settings_from(
        trusted_proxies=trusted_proxy or None, max_connections=max_connections,
        max_connections_per_address=max_connections_per_address, request_head_timeout=request_head_timeout,
    )  # fmt: skip
    sockets = claim_port("the website", host, port, "--port PORT")
    port = sockets[0].getsockname()[1]
    guard = ConnectionGuard(ConnectionLimits.from_settings(settings))
    site_app = build_site(base_url or local_origin(host, port))
    run_listeners([Listener("website", site_app, host, port, guard, sockets=sockets)])


def host_readiness() -> str | None:
    """One line when this host cannot run rigs and confined user code, naming what is missing and the command
    that fixes it; None when it can."""
    from hangar.rigs.backends.enclosure import probe

    reason = probe.unavailable_reason()
    if reason is None:
        return None
    what = f"unavailable: rigs, shell steps and command agents ({reason})"
    packages = probe.missing_packages()
    if packages:
        return f"{what}; fix: sudo apt-get install -y {' '.join(packages)}"
    if not sys.platform.startswith("linux") or os.geteuid() != 0:
        return f"{what}; fix: run the server as root on Linux"
    return what  # the reason itself says what to do (a host account with the rig user's uid, a missing kernel feature)


def build_pack_command(settings: Settings) -> str:
    """``hangar rigs build-pack`` as a shell here runs it to build where this server looks for packs."""
    command = hangar_command("rigs", "build-pack", "--data-dir", settings.data_dir)
    if settings.rig_packs_dir is None:
        return command
    return f"HANGAR_RIG_PACKS_DIR={shlex.quote(str(settings.rig_packs_dir))} {command}"


def terminal_pack_job(settings: Settings, retry: str) -> BackgroundJob | None:
    """At a start without the terminal image pack (the first one): a job that builds it while the server runs,
    saying so in the output with each step. Rigs, shell steps and command agents asked for meanwhile wait for
    this build (the pack's build lock) rather than start another; a failed build names ``retry``, the command
    that builds it now. None when the pack is there."""
    from hangar.rigs.images.builder import TERMINAL, ensure_pack, pack_ready

    packs_root = settings.packs_root
    if pack_ready(packs_root, TERMINAL):
        return None

    async def prepare() -> None:
        label = TERMINAL.label
        typer.echo(
            f"preparing the {label} (first start; several minutes, in the background): rigs, shell steps and "
            "command agents wait for it"
        )
        try:
            info = await ensure_pack(packs_root, typer.echo, TERMINAL, settings.rig_apt_root)
        except (HangarError, OSError) as exc:
            why = exc.message if isinstance(exc, HangarError) else str(exc)
            typer.echo(
                f"{label} build failed: {why}; it is retried when a rig, shell step or command agent first needs "
                f"it, at the next start, or now with: {retry}"
            )
            return
        if info.built_in_s is not None:
            typer.echo(f"{label} built in {info.built_in_s:.0f} s")

    return prepare


def local_origin(host: str, port: int) -> str:
    shown = "127.0.0.1" if host in ("0.0.0.0", "") else (f"[{host}]" if ":" in host else host)
    return f"http://{shown}:{port}"
