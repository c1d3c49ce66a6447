"""The public website as this build composes it: the site's reference pages are handed what they document (the
parts' ops, routes and events, the step bodies, the command line) here, at build time, so the site itself imports
no part, no server and no command line."""

from __future__ import annotations

from typing import Any

import typer.main
from starlette.applications import Starlette

from hangar.cli.root import app
from hangar.site.app import website_app
from hangar.site.reference import Sources


def _cli_command() -> Any:
    # The root carries every command by now: importing this module ran the package face that registers them.
    return typer.main.get_command(app)


def _parts() -> list[Any]:
    from hangar.server.parts import all_parts

    return list(all_parts())


def _bodies() -> list[Any]:
    from hangar.pipelines import BodyRegistry
    from hangar.server.parts import all_parts, step_bodies

    return list(BodyRegistry(step_bodies(all_parts())).specs)


def reference_sources() -> Sources:
    """What the reference pages document, loaded when the site builds (a part that fails to load makes its
    section say so instead of failing the site)."""
    return Sources(parts=_parts, bodies=_bodies, cli=_cli_command)


def build_site(base_url: str | None = None) -> Starlette:
    return website_app(base_url, reference_sources())
