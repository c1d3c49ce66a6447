"""``hangar serve`` and ``hangar site``: the server and the public website on their listeners."""

from __future__ import annotations

import os
import sys
from typing import Annotated

import typer

from hangar.cli.root import DataDirOpt, settings_from
from hangar.ports import DEFAULT_PORT, DEFAULT_SITE_PORT


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
    # Imported here: the server and the website are heavy, and other commands start without them (the website
    # only when it is served: it brings the MCP SDK).
    from hangar.server.app import build_server
    from hangar.server.listeners import Listener, run_listeners

    # The rigs need to know where the website is (it is on every browser rig's allowlist): pass it on.
    settings = settings_from(
        host=host, port=port, data_dir=data_dir, public_url=public_url, web_client_url=web_client_url,
        site_port=site_port, site_url=site_url,
    )  # fmt: skip
    if no_site:
        settings = settings.model_copy(update={"site_port": None, "site_url": None})
    listeners = [Listener("server", build_server(settings), host, port)]
    if not no_site:
        from hangar.cli.website import build_site

        # Absolute links come from the configured origin, never from a request's Host header: pages are cached
        # publicly, and a shared cache must not hand one host's links to another.
        listeners.append(Listener("website", build_site(site_url or local_origin(host, site_port)), host, site_port))
    typer.echo(f"data directory: {settings.data_dir}")
    if (missing := host_readiness()) is not None:
        typer.echo(missing)
    typer.echo(f"owner credential: hangar admin owner-token --data-dir {settings.data_dir}")
    run_listeners(listeners)


def site(
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Website port.")] = DEFAULT_SITE_PORT,
    base_url: Annotated[str | None, typer.Option("--base-url", help="Canonical origin of the site.")] = None,
) -> None:
    """Run the public website alone."""
    from hangar.cli.website import build_site
    from hangar.server.listeners import Listener, run_listeners

    run_listeners([Listener("website", build_site(base_url or local_origin(host, port)), host, port)])


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


def local_origin(host: str, port: int) -> str:
    shown = "127.0.0.1" if host in ("0.0.0.0", "") else (f"[{host}]" if ":" in host else host)
    return f"http://{shown}:{port}"
