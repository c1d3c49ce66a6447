"""Loading and validating templates (JSON or YAML, CONTRACTS §5).

``load`` returns the template and its warnings, or raises ``TemplateInvalid`` listing every problem, each
naming the step or field to blame. Problems: not exactly one trigger, or the trigger not first; duplicate or
unknown step ids (in sources, waits or edges); a cycle; a step downstream of a router without an edge (or an
edge from a router without a ``routeKey``); a sub-pipeline naming its own template; ``maxAttempts`` below 1;
an unknown reducer, a reducer without ``outputKey`` or two reducers for one key; an unsupported
``outputSchema``; a malformed ``runWhen`` or router condition; a body's required setting missing.
Warnings: a body key no registered body has (the step never executes and does not fail the run).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from hangar.errors import InvalidArgs
from hangar.pipelines import predicates, schema
from hangar.pipelines.bodies.spec import BodyRegistry
from hangar.pipelines.model import BODYLESS_KINDS, REDUCERS, TRIGGER_BODY, StepKind, Template

SUBPIPELINE_BODY = "pipeline.subPipeline"
ROUTER_BODY = "flow.router"


class TemplateInvalid(InvalidArgs):
    """A template that cannot run; ``problems`` lists every reason, the message gives the first."""

    def __init__(self, problems: list[str]) -> None:
        first = problems[0] if problems else "the template is invalid"
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        super().__init__(f"invalid template: {first}{more}", field="template", detail_code="template_invalid")
        self.problems = problems


@dataclass(frozen=True)
class Loaded:
    template: Template
    warnings: list[str] = field(default_factory=list)


def parse_text(text: str, *, source: str = "template") -> Any:
    """JSON, or YAML (a superset); a syntax error names the line."""
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise TemplateInvalid([f"{source} is not valid JSON: {exc.msg} at line {exc.lineno}"]) from exc
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise TemplateInvalid([f"{source} is not valid YAML{where}"]) from exc


def load_file(path: Path, bodies: BodyRegistry | None) -> Loaded:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TemplateInvalid([f"cannot read {path}: {exc.strerror}"]) from exc
    return load(parse_text(text, source=path.name), bodies)


def _loc(loc: tuple[int | str, ...], raw: Any) -> str:
    """A pydantic error location as a readable path, naming steps by id: ``steps[check].config.timeoutMs``."""
    out = ""
    node = raw
    for part in loc:
        if isinstance(part, int):
            name = str(part)
            if isinstance(node, list) and part < len(node):
                item = node[part]
                if isinstance(item, Mapping) and isinstance(item.get("id"), str):
                    name = item["id"]
                node = item
            else:
                node = None
            out += f"[{name}]"
        else:
            node = node.get(part) if isinstance(node, Mapping) else None
            out += f".{part}" if out else part
    return out


def _pydantic_problems(exc: ValidationError, raw: Any) -> list[str]:
    problems = []
    for err in exc.errors():
        where = _loc(tuple(err["loc"]), raw)
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "is not a known field"
        elif err["type"] == "literal_error" and where.endswith(".reducer"):
            msg = f"{err.get('input')!r} is not a reducer (reducers: {', '.join(REDUCERS)})"
        problems.append(f"{where}: {msg}" if where else msg)
    return problems


def parse(raw: Any) -> Template:
    """The document as a template, each piece of the right shape (``TemplateInvalid`` listing what is not)."""
    if not isinstance(raw, Mapping):
        raise TemplateInvalid(["a template must be an object with id, steps and edges"])
    try:
        return Template.model_validate(raw)
    except ValidationError as exc:
        raise TemplateInvalid(_pydantic_problems(exc, raw)) from exc


def load(raw: Any, bodies: BodyRegistry | None) -> Loaded:
    """Parse and validate a template document; ``bodies`` (when given) checks body keys and required settings."""
    template = parse(raw)
    problems, warnings = check(template, bodies)
    if problems:
        raise TemplateInvalid(problems)
    return Loaded(template, warnings)


AWAIT_APPROVAL_BODY = "orchestration.awaitApproval"


def check(template: Template, bodies: BodyRegistry | None) -> tuple[list[str], list[str]]:
    """Cross-step rules: (problems, warnings)."""
    problems: list[str] = []
    warnings: list[str] = []
    ids = [s.id for s in template.steps]
    known = set(ids)
    seen: set[str] = set()
    for sid in ids:
        if sid in seen:
            problems.append(f"step id {sid!r} is used twice")
        seen.add(sid)

    triggers = [s.id for s in template.steps if s.kind is StepKind.trigger]
    if len(triggers) != 1:
        found = ", ".join(triggers) if triggers else "none"
        problems.append(f"a template needs exactly one trigger step (found {found})")
    elif template.steps[0].kind is not StepKind.trigger:
        problems.append(f"the trigger step {triggers[0]!r} must be the first step")

    routers = {s.id for s in template.steps if s.kind is StepKind.router}
    edges_into: dict[str, set[str]] = {}
    for e in template.edges:
        where = f"edge {e.from_}→{e.to}"
        for end in (e.from_, e.to):
            if end not in known:
                problems.append(f"{where}: unknown step id {end!r}")
        if e.from_ in routers and not e.route_key:
            problems.append(f"{where}: needs a routeKey ({e.from_} is a router)")
        if e.route_key is not None and e.from_ in known and e.from_ not in routers:
            problems.append(f"{where}: routeKey only applies to edges out of a router")
        edges_into.setdefault(e.to, set()).add(e.from_)

    output_reducers: dict[str, tuple[str, str]] = {}
    for s in template.steps:
        where = f"step {s.id}"
        for src in s.source_ids:
            if src not in known:
                problems.append(f"{where}: trigger.sourceStepIds names unknown step {src!r}")
            elif src in routers and src not in edges_into.get(s.id, set()):
                problems.append(f"{where}: listens to router {src!r} but no edge {src}→{s.id} carries a routeKey")
        for w in s.wait_for_step_ids:
            if w not in known:
                problems.append(f"{where}: waitForStepIds names unknown step {w!r}")
        if s.id in s.source_ids or s.id in s.wait_for_step_ids:
            problems.append(f"{where}: depends on itself")
        has_deps = bool(s.source_ids or s.wait_for_step_ids or edges_into.get(s.id))
        if s.kind is StepKind.trigger:
            if has_deps:
                problems.append(f"{where}: a trigger step has no sources, waits or edges into it")
        elif not has_deps:
            problems.append(f"{where}: has no trigger.sourceStepIds or waitForStepIds; only the trigger starts alone")
        if s.kind is StepKind.join and not s.wait_for_step_ids:
            problems.append(f"{where}: a join step needs waitForStepIds")
        if s.kind is not StepKind.join and s.wait_for_step_ids:
            problems.append(f"{where}: waitForStepIds is for join steps; use trigger.sourceStepIds")
        problems += _check_config(template, s.id, s.kind, s.body_key, s.config.model_dump(by_alias=True), bodies)
        problems += _check_body(s.id, s.kind, s.body, s.body_key, bodies, warnings)
        cfg = s.config
        if "awaitApproval" in cfg.extras and s.body_key != AWAIT_APPROVAL_BODY:
            # The exemption from the 24-hour suspended-step timeout belongs to the partial-approval gate alone.
            problems.append(f"{where}: extras.awaitApproval is set only by the {AWAIT_APPROVAL_BODY} body")
        if cfg.reducer is not None:
            if not cfg.output_key:
                problems.append(f"{where}: config.reducer {cfg.reducer} needs config.outputKey")
            else:
                other = output_reducers.get(cfg.output_key)
                if other is not None and other[1] != cfg.reducer:
                    problems.append(
                        f"{where}: config.reducer {cfg.reducer} on {cfg.output_key!r} conflicts with "
                        f"{other[1]} on step {other[0]}"
                    )
                output_reducers.setdefault(cfg.output_key, (s.id, cfg.reducer))
    problems += _cycles(template, known, edges_into)
    return problems, warnings


def _check_body(
    sid: str,
    kind: StepKind,
    declared: str | None,
    key: str | None,
    bodies: BodyRegistry | None,
    warnings: list[str],
) -> list[str]:
    if kind in BODYLESS_KINDS:
        if declared:
            warnings.append(f"step {sid}: a {kind.value} step has no body; {declared!r} is ignored")
        return []
    if not key:
        return [f"step {sid}: a {kind.value} step needs a body key"]
    if kind is StepKind.trigger and key != TRIGGER_BODY:
        return [f"step {sid}: the trigger step's body is {TRIGGER_BODY}, not {key!r}"]
    if bodies is not None and key not in bodies and kind is not StepKind.trigger:
        warnings.append(f"step {sid}: body {key!r} is not registered; the step will be skipped and never execute")
    return []


def _check_config(
    template: Template,
    sid: str,
    kind: StepKind,
    key: str | None,
    wire: dict[str, Any],
    bodies: BodyRegistry | None,
) -> list[str]:
    where = f"step {sid}: config"
    problems: list[str] = []
    extras = wire.get("extras") or {}
    out_schema = wire.get("outputSchema")
    if out_schema is not None:
        problems += [f"step {sid}: config.{p}" for p in schema.check_schema(out_schema)]
    if "runWhen" in extras:
        try:
            predicates.check_run_when(extras["runWhen"], "extras.runWhen")
        except predicates.PredicateError as exc:
            problems.append(f"{where}.{exc}")
    if key == SUBPIPELINE_BODY and extras.get("templateId") == template.id:
        problems.append(f"{where}.extras.templateId: a pipeline cannot call itself ({template.id!r})")
    if key == ROUTER_BODY:
        problems += [f"{where}.{p}" for p in router_problems(extras)]
    spec = bodies.get(key) if bodies is not None else None
    if spec is not None:
        problems += [f"{where}: {spec.key} needs {name}" for name in spec.missing_config(wire)]
    return problems


def router_problems(extras: Mapping[str, Any]) -> list[str]:
    """A router condition in one of the three shapes, in priority order (predicate, switch, legacy)."""
    try:
        if "predicate" in extras:
            predicates.check(extras["predicate"], "extras.predicate")
        elif "switchKey" in extras:
            if not isinstance(extras["switchKey"], str) or not extras["switchKey"]:
                return ["extras.switchKey must name a state key"]
            cases = extras.get("cases")
            if not (isinstance(cases, list | dict) and cases):
                return ["extras.cases must be a non-empty list (or map of route key to text)"]
        elif "left" in extras:
            predicates.check_comparison(extras, "extras")
        else:
            return ["extras needs a router condition: predicate, switchKey with cases, or left/op/right"]
    except predicates.PredicateError as exc:
        return [str(exc)]
    return []


def _cycles(template: Template, known: set[str], edges_into: Mapping[str, set[str]]) -> list[str]:
    """Kahn's algorithm (iterative, so a 1,000-step chain is fine); a leftover names one cycle."""
    deps: dict[str, list[str]] = {}
    for s in template.steps:
        deps[s.id] = list(
            dict.fromkeys(d for d in (*s.source_ids, *s.wait_for_step_ids, *edges_into.get(s.id, ())) if d in known)
        )
    dependents: dict[str, list[str]] = {sid: [] for sid in deps}
    missing = {sid: len(ds) for sid, ds in deps.items()}
    for sid, ds in deps.items():
        for d in ds:
            dependents[d].append(sid)
    queue = [sid for sid, n in missing.items() if n == 0]
    while queue:
        sid = queue.pop()
        for nxt in dependents[sid]:
            missing[nxt] -= 1
            if missing[nxt] == 0:
                queue.append(nxt)
    left = [sid for sid in deps if missing[sid] > 0]
    if not left:
        return []
    # Walk dependencies among the leftovers until a step repeats: that walk closes a cycle.
    walk = [left[0]]
    while True:
        nxt = next(d for d in deps[walk[-1]] if missing[d] > 0)
        if nxt in walk:
            cycle = [*walk[walk.index(nxt) :], nxt]
            return ["steps " + " → ".join(reversed(cycle)) + " form a cycle"]
        walk.append(nxt)
