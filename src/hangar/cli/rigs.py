"""``hangar rigs build-pack|check``: build image packs (the terminal's, a browser engine's, or all of them) ahead
of the first rig, and say whether this host can run enclosure rigs. Both look for packs where the server does:
``HANGAR_RIG_PACKS_DIR`` when set, else ``<dataDir>/rigs/microvm-packs``."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from hangar.cli.root import DataDirOpt, settings_from
from hangar.errors import HangarError
from hangar.rigs.images.packrecipe import PACK_NAME
from hangar.rigs.images.recipes import ALL, recipe_named

if TYPE_CHECKING:
    from hangar.rigs.images.packrecipe import PackRecipe

rigs_app = typer.Typer(help="Rig machines: image packs and host checks.", no_args_is_help=True)


def _roots(data_dir: Path | None) -> tuple[Path, Path]:
    """The rigs directory and the packs directory, as the server would use them with this data directory."""
    settings = settings_from(data_dir=data_dir)
    return settings.data_dir / "rigs", settings.packs_root


def _apt_root(data_dir: Path | None) -> Path | None:
    return settings_from(data_dir=data_dir).rig_apt_root


@rigs_app.command("build-pack")
def build_pack(
    names: Annotated[
        list[str] | None, typer.Argument(help=f"Packs to build: {', '.join(r.name for r in ALL)}.", show_default=False)
    ] = None,
    every: Annotated[bool, typer.Option("--all", help="Build every pack (the terminal's and each browser's).")] = False,
    data_dir: DataDirOpt = None,
) -> None:
    """Build image packs (Debian packages via mmdebstrap) unless they are already there, one after the other, one
    line of progress each; the terminal's by default."""
    _, packs = _roots(data_dir)
    try:
        chosen = list(ALL) if every else [recipe_named(name) for name in names or [PACK_NAME]]
    except HangarError as exc:
        typer.echo(f"error: {exc.message}", err=True)
        raise typer.Exit(2) from exc
    for recipe in chosen:
        try:
            _build_one(packs, recipe, _apt_root(data_dir))
        except HangarError as exc:
            typer.echo(f"error: {recipe.name}: {exc.message}; run the command again to retry", err=True)
            raise typer.Exit(1) from exc
        except KeyboardInterrupt:
            typer.echo(f"stopped building {recipe.name}; run the command again to build it", err=True)
            raise typer.Exit(130) from None


def _build_one(packs: Path, recipe: PackRecipe, apt_root: Path | None) -> None:
    """One pack with its progress: a bar on a terminal that ends as one line, else a line per step (a log
    reads those)."""
    # Imported here: the progress display and the builder are heavy, and every other command starts without them.
    from rich.console import Console
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from hangar.rigs.images.builder import STEPS, ensure_pack
    from hangar.rigs.images.packs import step_numbers

    console = Console(stderr=True)
    if not console.is_terminal:
        info = asyncio.run(ensure_pack(packs, lambda text: print(text, file=sys.stderr, flush=True), recipe, apt_root))
    else:
        with Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.completed}/{task.total}"),
            TimeElapsedColumn(),
            console=console,
            transient=True,  # the bar gives way to the pack's one closing line
        ) as progress:
            task = progress.add_task(f"{recipe.label} {recipe.revision}", total=len(STEPS))

            def report(text: str) -> None:
                numbers = step_numbers(text)
                progress.update(task, description=text, completed=numbers[0] if numbers else None)

            info = asyncio.run(ensure_pack(packs, report, recipe, apt_root))
    if info.built_in_s is None:
        typer.echo(f"{recipe.name} already built at {info.path}")
    else:
        typer.echo(f"{recipe.name} built at {info.path} in {info.built_in_s:.0f} s")


@rigs_app.command("check")
def check(data_dir: DataDirOpt = None) -> None:
    """Say whether this host can run enclosure rigs, and if not, what is missing."""
    from hangar.rigs.backends.enclosure import EnclosureBackend

    rigs, packs = _roots(data_dir)
    reason = EnclosureBackend(rigs, packs_root=packs).unavailable_reason()
    if reason is None:
        typer.echo("enclosure rigs can run on this host")
        return
    typer.echo(f"enclosure rigs cannot run here: {reason}")
    raise typer.Exit(1)
