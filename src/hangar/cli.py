"""The ``hangar`` command line (CONTRACTS.md section 1). Parts add their sub-commands here, one line each."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer

from hangar.config import DEFAULT_PORT, DEFAULT_SITE_PORT, Settings
from hangar.pipelines.cli import pipeline_app
from hangar.rigs.cli import rigs_app

app = typer.Typer(
    name="hangar",
    help="Hangar: a self-hosted control center where AI agents and people work together.",
    no_args_is_help=True,
    add_completion=False,
)
admin_app = typer.Typer(help="Operator tasks on a data directory.", no_args_is_help=True)
app.add_typer(admin_app, name="admin")
app.add_typer(pipeline_app, name="pipeline")
app.add_typer(rigs_app, name="rigs")

DataDirOpt = Annotated[
    Path | None, typer.Option("--data-dir", help="Data directory (default $HANGAR_DATA_DIR or ~/.local/share/hangar).")
]


def settings_from(**flags: object) -> Settings:
    try:
        return Settings.from_flags(**flags)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from exc


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Server port.")] = DEFAULT_PORT,
    data_dir: DataDirOpt = None,
    public_url: Annotated[str | None, typer.Option("--public-url", help="Canonical public origin.")] = None,
    web_client_url: Annotated[
        str | None, typer.Option("--web-client-url", help="Origin SSO callbacks redirect to ($SERVER_WEB_CLIENT_URL).")
    ] = None,
    site_port: Annotated[int, typer.Option("--site-port", help="Website port.")] = DEFAULT_SITE_PORT,
    no_site: Annotated[bool, typer.Option("--no-site", help="Do not serve the website.")] = False,
    site_url: Annotated[
        str | None, typer.Option("--site-url", help="Public origin of the website (default: its own listener).")
    ] = None,
) -> None:
    """Run the self-hosted server, and the website on its own port unless --no-site."""
    from hangar.server.app import build_server
    from hangar.server.listeners import Listener, run_listeners

    settings = settings_from(
        host=host, port=port, data_dir=data_dir, public_url=public_url, web_client_url=web_client_url
    )
    listeners = [Listener("server", build_server(settings), host, port)]
    if not no_site:
        from hangar.site.app import build_site

        # Absolute links come from the configured origin, never from a request's Host header: pages are cached
        # publicly, and a shared cache must not hand one host's links to another.
        listeners.append(Listener("website", build_site(site_url or local_origin(host, site_port)), host, site_port))
    typer.echo(f"data directory: {settings.data_dir}")
    if (missing := host_readiness()) is not None:
        typer.echo(missing)
    typer.echo(f"owner credential: hangar admin owner-token --data-dir {settings.data_dir}")
    run_listeners(listeners)


@app.command()
def site(
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Website port.")] = DEFAULT_SITE_PORT,
    base_url: Annotated[str | None, typer.Option("--base-url", help="Canonical origin of the site.")] = None,
) -> None:
    """Run the public website alone."""
    from hangar.server.listeners import Listener, run_listeners
    from hangar.site.app import build_site

    run_listeners([Listener("website", build_site(base_url or local_origin(host, port)), host, port)])


def host_readiness() -> str | None:
    """One line when this host cannot run rigs and confined user code, naming what is missing and the command
    that fixes it; None when it can."""
    from hangar.rigs.backends.enclosure import probe

    reason = probe.unavailable_reason()
    if reason is None:
        return None
    packages = probe.missing_packages()
    fix = f"sudo apt-get install -y {' '.join(packages)}" if packages else "run the server as root on Linux"
    return f"unavailable: rigs, shell steps and command agents ({reason}); fix: {fix}"


def local_origin(host: str, port: int) -> str:
    shown = "127.0.0.1" if host in ("0.0.0.0", "") else (f"[{host}]" if ":" in host else host)
    return f"http://{shown}:{port}"


@admin_app.command("owner-token")
def owner_token(data_dir: DataDirOpt = None) -> None:
    """Print a new device credential for the server owner, creating the owner on first use."""
    from hangar.server.context_factory import open_context

    settings = settings_from(data_dir=data_dir)

    async def run() -> str:
        from hangar.core.part_def import CORE_PART
        from hangar.identity.part import IDENTITY_PART

        async with open_context(settings, parts=[CORE_PART, IDENTITY_PART]) as ctx:
            owner = await ctx.identity.ensure_server_owner()
            return await ctx.identity.issue_device(owner.id, "owner-token")

    typer.echo(asyncio.run(run()))


@admin_app.command("trusted-host-exec")
def trusted_host_exec_cmd(
    state: Annotated[str, typer.Argument(help="on or off")],
    data_dir: DataDirOpt = None,
) -> None:
    """Run shell steps and command agents on this host instead of enclosures (single-person installs only).

    Off by default. When on, user-authored code runs as the server's user with access to everything the server
    can reach; every server start says so in its log."""
    from hangar.core.confine import SETTING_TRUSTED_HOST_EXEC
    from hangar.server.context_factory import open_context

    if state not in ("on", "off"):
        raise typer.BadParameter(f"expected on or off, got {state!r}", param_hint="STATE")
    settings = settings_from(data_dir=data_dir)

    async def run() -> None:
        from hangar.core.part_def import CORE_PART
        from hangar.identity.part import IDENTITY_PART

        async with open_context(settings, parts=[CORE_PART, IDENTITY_PART]) as ctx:
            await ctx.identity.set_setting(SETTING_TRUSTED_HOST_EXEC, state == "on")

    asyncio.run(run())
    if state == "on":
        typer.echo("trusted host execution is ON: user code runs on this host as the server's user")
    else:
        typer.echo("trusted host execution is off: user code runs only in enclosures")


def main() -> None:
    app()
