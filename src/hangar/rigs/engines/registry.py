"""The engines browser rigs run, by their ``engine`` value. Registration is explicit: one line per engine."""

from __future__ import annotations

from hangar.errors import InvalidArgs
from hangar.rigs.engines.chromium import engine as chromium
from hangar.rigs.engines.firefox import engine as firefox
from hangar.rigs.engines.launch import EngineRecipe
from hangar.rigs.engines.webkit import engine as webkit

RECIPES: dict[str, EngineRecipe] = {
    chromium.RECIPE.engine: chromium.RECIPE,  # engine-a
    firefox.RECIPE.engine: firefox.RECIPE,  # engine-b
    webkit.RECIPE.engine: webkit.RECIPE,  # engine-c
}


def recipe_for(engine: str) -> EngineRecipe:
    try:
        return RECIPES[engine]
    except KeyError:
        raise InvalidArgs(
            f"engine must be one of {', '.join(sorted(RECIPES))}, not {engine!r}", field="engine"
        ) from None
