"""``hangar rigs build-pack|check``: build an image pack (the terminal's, or a browser engine's) ahead of the
first rig, and say whether this host can run enclosure rigs."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Annotated

import typer

from hangar.cli.root import DataDirOpt, settings_from
from hangar.errors import HangarError
from hangar.rigs.image.pack import PACK_NAME, STEPS, ensure_pack
from hangar.rigs.image.recipes import ALL, recipe_named

rigs_app = typer.Typer(help="Rig machines: image packs and host checks.", no_args_is_help=True)

_STEP = re.compile(r"\((\d+)/(\d+)\)$")


def _rigs_root(data_dir: Path | None) -> Path:
    return settings_from(data_dir=data_dir).data_dir / "rigs"


@rigs_app.command("build-pack")
def build_pack(
    name: Annotated[
        str, typer.Argument(help=f"The pack: {', '.join(r.name for r in ALL)}.", show_default=True)
    ] = PACK_NAME,
    data_dir: DataDirOpt = None,
) -> None:
    """Build an image pack (Debian packages via mmdebstrap) unless it is already there; the terminal's by
    default."""
    # Imported here: the progress display is heavy, and every other command starts without it.
    from rich.console import Console
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    packs = _rigs_root(data_dir) / "microvm-packs"
    try:
        recipe = recipe_named(name)
    except HangarError as exc:
        typer.echo(f"error: {exc.message}", err=True)
        raise typer.Exit(2) from exc
    console = Console(stderr=True)
    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        console=console,
    ) as progress:
        task = progress.add_task(f"{recipe.label} {recipe.revision}", total=len(STEPS))

        def report(text: str) -> None:
            found = _STEP.search(text)
            if found:
                progress.update(task, completed=int(found.group(1)), description=text)
            else:
                progress.update(task, description=text)

        try:
            info = asyncio.run(ensure_pack(packs, report, recipe))
        except HangarError as exc:
            console.print(f"[red]error:[/red] {exc.message}")
            raise typer.Exit(1) from exc
        progress.update(task, completed=len(STEPS))
    if info.built_in_s is None:
        typer.echo(f"{recipe.name} already built at {info.path}")
    else:
        typer.echo(f"{recipe.name} built at {info.path} in {info.built_in_s:.0f} s")


@rigs_app.command("check")
def check(data_dir: DataDirOpt = None) -> None:
    """Say whether this host can run enclosure rigs, and if not, what is missing."""
    from hangar.rigs.backends.enclosure import EnclosureBackend

    reason = EnclosureBackend(_rigs_root(data_dir)).unavailable_reason()
    if reason is None:
        typer.echo("enclosure rigs can run on this host")
        return
    typer.echo(f"enclosure rigs cannot run here: {reason}")
    raise typer.Exit(1)
