"""The root of the ``hangar`` command line (CONTRACTS.md section 1) and what its sub-commands share. The commands
themselves are registered on it in ``hangar.cli`` (the package face), one line each."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from hangar.config import Settings

app = typer.Typer(
    name="hangar",
    help="Hangar: a self-hosted control center where AI agents and people work together.",
    no_args_is_help=True,
    add_completion=False,
)

DataDirOpt = Annotated[
    Path | None, typer.Option("--data-dir", help="Data directory (default $HANGAR_DATA_DIR or ~/.local/share/hangar).")
]


def settings_from(**flags: object) -> Settings:
    # Imported here: settings stand on pydantic, which `hangar --help` does not need.
    from hangar.config import Settings

    try:
        return Settings.from_flags(**flags)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from exc
