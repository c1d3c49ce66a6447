"""The ``hangar`` command line: the composition root of the command side. It is, with ``hangar.server``, the only
place that knows every part; each sub-command group is registered here explicitly, one line each."""

from __future__ import annotations

import sys

import typer

from hangar.cli import serve
from hangar.cli.admin import admin_app
from hangar.cli.pipeline import pipeline_app
from hangar.cli.righost import rig_host, rig_host_credential_app
from hangar.cli.rigs import rigs_app
from hangar.cli.root import app
from hangar.cli.worker import worker, worker_credential_app
from hangar.errors import HangarError, InvalidArgs

app.command()(serve.serve)
app.command()(serve.site)
app.add_typer(admin_app, name="admin")
app.add_typer(pipeline_app, name="pipeline")
app.add_typer(rigs_app, name="rigs")
app.command()(worker)
app.command("rig-host")(rig_host)
admin_app.add_typer(worker_credential_app, name="worker-credential")
admin_app.add_typer(rig_host_credential_app, name="rig-host-credential")


def main() -> None:
    """The ``hangar`` command. An error a command lets through (a database that cannot be opened, a data directory
    in use) is one line on stderr, exit 1 (2 for bad input), never a traceback."""
    try:
        app()
    except HangarError as exc:
        typer.echo(f"hangar: {exc.message}", err=True)
        sys.exit(2 if isinstance(exc, InvalidArgs) else 1)


__all__ = ["app", "main"]
