"""The ``hangar`` command line: the composition root of the command side. It is, with ``hangar.server``, the only
place that knows every part; each sub-command group is registered here explicitly, one line each."""

from __future__ import annotations

from hangar.cli import serve
from hangar.cli.admin import admin_app
from hangar.cli.pipeline import pipeline_app
from hangar.cli.rigs import rigs_app
from hangar.cli.root import app

app.command()(serve.serve)
app.command()(serve.site)
app.add_typer(admin_app, name="admin")
app.add_typer(pipeline_app, name="pipeline")
app.add_typer(rigs_app, name="rigs")


def main() -> None:
    app()


__all__ = ["app", "main"]
