"""``flow.router``: evaluates a condition and returns the route key whose edge fires.

Three shapes, first present wins: a predicate tree (``extras.predicate``, routes ``true``/``false``), a switch
(``extras.switchKey``, ``cases``, ``default``: the first case the state value contains, case-insensitively), a
legacy comparison (``extras.left``, ``op``, ``right``, routes ``true``/``false``). Pure: it honours dry runs by
routing as it would.
"""

from __future__ import annotations

from typing import Any

from hangar.errors import HangarError
from hangar.pipelines import predicates
from hangar.pipelines.bodies.spec import ConfigField, body
from hangar.pipelines.step import StepContext
from hangar.pipelines.step_results import StepResult
from hangar.pipelines.substitute import ABSENT, as_text, walk
from hangar.pipelines.template import router_problems

DEFAULT_ROUTE = "default"


def switch_route(extras: dict[str, Any], state: Any) -> str:
    value = walk(state, str(extras["switchKey"]))
    text = "" if value is ABSENT or value is None else as_text(value).lower()
    cases = extras["cases"]
    pairs = list(cases.items()) if isinstance(cases, dict) else [(str(c), str(c)) for c in cases]
    for key, needle in pairs:
        if str(needle).lower() in text:
            return str(key)
    return str(extras.get("default") or DEFAULT_ROUTE)


@body(
    "flow.router",
    summary="Routes to the edge whose routeKey matches a predicate tree, a switch, or a comparison.",
    config=[
        ConfigField("extras.predicate", "Predicate tree (fileExists, comparison, and, or, not); routes true/false"),
        ConfigField("extras.switchKey", "State key whose value the cases are looked for in"),
        ConfigField("extras.cases", "List of route keys (or map of route key to text) matched case-insensitively"),
        ConfigField("extras.default", "Route key when no case matches (default 'default')"),
        ConfigField("extras.left", "Legacy comparison: state key"),
        ConfigField("extras.op", "Legacy comparison: equals, notEquals, contains, exists, notExists, gt, lt"),
        ConfigField("extras.right", "Legacy comparison: literal value"),
    ],
    honours_dry_run=True,
)
async def flow_router(step: StepContext) -> StepResult:
    extras = step.config.extras
    problems = router_problems(extras)
    if problems:
        return StepResult.failed(problems[0])
    if "predicate" in extras:
        try:
            met = await predicates.evaluate(extras["predicate"], step.state, step.folders)
        except HangarError as exc:  # a look outside its folders, or past its bounds
            return StepResult.failed(exc.message)
        key = "true" if met else "false"
    elif "switchKey" in extras:
        key = switch_route(extras, step.state)
    else:
        met = predicates.compare(walk(step.state, str(extras["left"])), str(extras["op"]), extras.get("right"))
        key = "true" if met else "false"
    return StepResult.route(key, output=key)


BODIES = [flow_router]
