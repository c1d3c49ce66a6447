"""The engines browser rigs run, by their ``engine`` value. Registration is explicit: one line per engine."""

from __future__ import annotations

from hangar.errors import InvalidArgs
from hangar.rigs.engines import engine_a, engine_b, engine_c
from hangar.rigs.engines.launch import EngineRecipe

RECIPES: dict[str, EngineRecipe] = {
    engine_a.RECIPE.engine: engine_a.RECIPE,
    engine_b.RECIPE.engine: engine_b.RECIPE,
    engine_c.RECIPE.engine: engine_c.RECIPE,
}


def recipe_for(engine: str) -> EngineRecipe:
    try:
        return RECIPES[engine]
    except KeyError:
        raise InvalidArgs(
            f"engine must be one of {', '.join(sorted(RECIPES))}, not {engine!r}", field="engine"
        ) from None
