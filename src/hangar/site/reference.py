"""Reference sections generated from the code when the site is built, so they cannot drift from it.

What they document is handed over as ``Sources`` by whoever composes the product (``hangar.cli.website``): the
site imports no part, server or command line. Each source is loaded when its section is generated, so a part that
is broken or not installed makes its section say so instead of failing the whole site.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from starlette.routing import BaseRoute, Mount, Route, WebSocketRoute

from hangar.core.event_types import DomainEvent
from hangar.core.part import Part
from hangar.rpc.frames import MARK, payload_name, payload_schema, resolve, selected
from hangar.rpc.mcp.tools import hints_of, is_tool, openai_name
from hangar.rpc.registry import OpSpec, spec_of

log = logging.getLogger(__name__)


def _nothing() -> Sequence[Any]:
    return ()


@dataclass(frozen=True)
class Sources:
    """What the generated sections document, each loaded on demand: the server's parts (ops, routes, events),
    the pipeline step bodies, and the command line's root command (a click command)."""

    parts: Callable[[], Sequence[Part]] = _nothing
    bodies: Callable[[], Sequence[Any]] = _nothing
    cli: Callable[[], Any] | None = None


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ").strip()


def _table(head: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


# Objects nested deeper than this are named (by their model), not spelled out, to keep a table cell readable.
_EXPAND_DEPTH = 3


def _literal(value: object) -> str:
    return f"`{value}`" if isinstance(value, str) else f"`{json.dumps(value)}`"


def _type_name(schema: dict[str, Any], defs: dict[str, Any] | None = None, depth: int = 0) -> str:
    """A compact rendering of a JSON Schema: ``list of``, ``map of``, ``{`field`: type, ...}``, ``or``."""
    defs = defs or {}
    if "anyOf" in schema:
        return " or ".join(_type_name(s, defs, depth) for s in schema["anyOf"])
    if "oneOf" in schema:  # a union told apart by its ``type``: each kind by its type, with its fields
        return " or ".join(_kind(s, defs, depth) for s in schema["oneOf"])
    if "enum" in schema:
        return " / ".join(_literal(v) for v in schema["enum"])
    if "const" in schema:
        return _literal(schema["const"])
    if "$ref" in schema:
        name = str(schema["$ref"]).rsplit("/", 1)[-1]
        target = defs.get(name)
        if not isinstance(target, dict) or ("properties" in target and depth >= _EXPAND_DEPTH):
            return name
        return _type_name(target, defs, depth)
    t = schema.get("type", "any")
    if t == "array":
        return f"list of {_type_name(schema.get('items', {}), defs, depth)}"
    if t == "object":
        if "properties" in schema:
            return "{" + _fields(schema, defs, depth + 1) + "}"
        values = schema.get("additionalProperties")
        return f"map of {_type_name(values, defs, depth)}" if isinstance(values, dict) and values else "object"
    if t == "string" and schema.get("format") == "date-time":
        return "timestamp"
    return str(t)


def _kind(member: dict[str, Any], defs: dict[str, Any], depth: int) -> str:
    target = defs.get(str(member.get("$ref", "")).rsplit("/", 1)[-1], member)
    kind = target.get("properties", {}).get("type", {}).get("const") if isinstance(target, dict) else None
    if kind is None:
        return _type_name(member, defs, depth)
    rest = {**target, "properties": {k: v for k, v in target["properties"].items() if k != "type"}}
    return f"`{kind}` {{{_fields(rest, defs, depth + 1)}}}"


def _fields(schema: dict[str, Any], defs: dict[str, Any], depth: int) -> str:
    """``name: type`` for each property; ``?`` marks one that may be left out."""
    props: dict[str, Any] = schema.get("properties", {})
    required = set(schema.get("required", []))
    return ", ".join(
        f"`{name}{'' if name in required else '?'}`: {_type_name(prop, defs, depth)}" for name, prop in props.items()
    )


def _args_of(model: Any) -> str:
    """One entry per field of an op's argument model: name, type, required or default."""
    schema = model.model_json_schema(by_alias=True)
    if not schema.get("properties"):
        return "none"
    return _fields(schema, schema.get("$defs", {}), 1)


def _result_of(spec: OpSpec) -> str:
    """The shape of what an op answers (a watch: its first reply), in the same notation as its arguments."""
    schema = spec.result_schema
    if schema is None:
        return "not declared"
    defs = schema.get("$defs", {})
    if schema.get("properties"):
        return _fields(schema, defs, 1)
    return _type_name(schema, defs)


def _events_of(spec: OpSpec, events: Sequence[type[DomainEvent]]) -> str:
    """What a watch sends after its reply: a model's fields, or the kinds of a union by name (a frame of a stored
    domain event is named for its type: ``AgentsRunStartedInSpace``, payload ``AgentsRunStarted``)."""
    schema = spec.events_schema
    if schema is None:
        return ""
    mark = schema.get(MARK)
    if mark is not None:  # stored domain events in an envelope: which ones, each payload in the events reference
        which = [c.type for c in selected(mark, events)]
        listed = ", ".join(f"`{t}`" for t in which) + (", and events people or scripts emit" if mark["emitted"] else "")
        return f"; then, per event: {_fields(schema, {}, 1)}, `type` one of {listed or 'none'}, `payload` its shape"
    resolved = resolve(schema, events)
    defs = resolved.get("$defs", {})
    shown = _fields(resolved, defs, 1) if resolved.get("properties") else _type_name(resolved, defs)
    if "oneOf" not in resolved and "$ref" not in resolved and isinstance(defs.get(resolved.get("title", "")), dict):
        shown = _type_name(defs[resolved["title"]], defs)
    return f"; then, per event: {shown}"


def rpc_ops(sources: Sources) -> str:
    out = []
    parts = sources.parts()
    events = [cls for part in parts for cls in part.events]
    for part in parts:
        if not part.ops:
            continue
        rows = []
        for fn in part.ops:
            spec = spec_of(fn)
            who = "server owner" if spec.server_owner else spec.min_role.name
            acts = ", ".join(sorted(spec.actions)) or "—"
            args, result = _args_of(spec.args_model), _result_of(spec) + _events_of(spec, events)
            rows.append((f"`{spec.name}`", spec.kind, spec.scope, who, acts, args, result, spec.summary))
        rows.sort(key=lambda r: r[0])
        out.append(f"### Part `{part.name}`\n\n")
        head = ("Op", "Kind", "Scope", "Minimum role", "Actions", "Arguments", "Result", "Summary")
        out.append(_table(head, rows))
        out.append("\n")
    if not out:
        return "No part of this build declares RPC ops.\n"
    return "".join(out)


def mcp_tools(sources: Sources) -> str:
    """The product MCP endpoint's tools: one per op that is not a watch, with its hints and schemas."""
    specs = sorted(
        (spec_of(fn) for part in sources.parts() for fn in part.ops if is_tool(spec_of(fn))), key=lambda s: s.name
    )
    if not specs:
        return "No part of this build declares ops, so the MCP endpoint offers no tools.\n"
    rows = []
    for spec in specs:
        hints = hints_of(spec)
        shown = ", ".join(f"`{k}`" for k in ("readOnlyHint", "destructiveHint") if hints.get(k))
        args = _args_of(spec.args_model)
        if spec.scope == "workspace":
            args = "`workspace_id`: string" + ("" if args == "none" else ", " + args)
        rows.append(
            (f"`{spec.name}`", f"`{openai_name(spec.name)}`", shown or "—", args, _result_of(spec), spec.summary)
        )
    head = ("Tool", "Dot-free name", "Hints", "Arguments (`inputSchema`)", "Result (`outputSchema`)", "Summary")
    return f"{len(specs)} tools.\n\n" + _table(head, rows)


def _purpose(endpoint: Any) -> str:
    """The first sentence of the handler's docstring, else the handler's name."""
    doc = (getattr(endpoint, "__doc__", None) or "").strip()
    if doc:
        return doc.split("\n\n")[0].replace("\n", " ")
    name = getattr(endpoint, "__qualname__", None) or type(endpoint).__name__
    return f"handler `{name}`"


def _route_rows(routes: Iterable[BaseRoute], prefix: str = "") -> list[tuple[str, str, str]]:
    rows: list[tuple[str, str, str]] = []
    for r in routes:
        if isinstance(r, Route):
            methods = ", ".join(sorted(m for m in (r.methods or {"GET"}) if m != "HEAD"))
            rows.append((methods, f"`{prefix}{r.path}`", _purpose(r.endpoint)))
        elif isinstance(r, WebSocketRoute):
            rows.append(("WebSocket", f"`{prefix}{r.path}`", _purpose(r.endpoint)))
        elif isinstance(r, Mount):
            rows.extend(_route_rows(r.routes, prefix + r.path))
    return rows


def server_routes(sources: Sources) -> str:
    out = []
    for part in sources.parts():
        rows = _route_rows(part.routes)
        if rows:
            out.append(f"### Part `{part.name}`\n\n")
            out.append(_table(("Method", "Path", "Purpose"), sorted(rows, key=lambda r: str(r[1]))))
            out.append("\n")
    return "".join(out) or "No part of this build declares HTTP routes beyond the socket.\n"


def domain_events(sources: Sources) -> str:
    rows = []
    for part in sources.parts():
        for cls in part.events:
            schema = payload_schema(cls)  # the wire form: camelCase, every field sent, the workspace left out
            fields = _fields(schema, schema.get("$defs", {}), 1) if schema.get("properties") else ""
            doc = (cls.__dict__.get("__doc__") or "").strip().split("\n\n")[0].replace("\n", " ")
            rows.append((f"`{cls.type}`", f"`{payload_name(cls)}`", part.name, fields or "—", doc))
    if not rows:
        return "No part of this build declares domain events.\n"
    return _table(("Type", "Payload type", "Part", "Payload", "Meaning"), sorted(rows))


def pipeline_steps(sources: Sources) -> str:
    specs = sorted(sources.bodies(), key=lambda b: str(getattr(b, "key", "")))
    if not specs:
        return "No step bodies are registered in this build.\n"
    out = [f"{len(specs)} bodies are registered: " + ", ".join(f"`{getattr(b, 'key', '?')}`" for b in specs) + ".\n\n"]
    for b in specs:
        out.append(f"### `{getattr(b, 'key', '?')}`\n\n{getattr(b, 'summary', '')}\n\n")
        fields = list(getattr(b, "config", ()) or ())
        if fields:
            rows = [
                (f"`{getattr(f, 'name', f)}`", "yes" if getattr(f, "required", False) else "no", getattr(f, "doc", ""))
                for f in fields
            ]
            out.append(_table(("Configuration", "Required", "Meaning"), rows) + "\n")
        else:
            out.append("No configuration.\n\n")
        if getattr(b, "honours_dry_run", False):
            out.append("Honours dry-run: reports what it would do instead of doing it.\n\n")
    return "".join(out)


def _click_rows(cmd: Any, path: str) -> list[str]:
    # typer vendors its own click, so commands and parameters are recognised by shape, not by class.
    out: list[str] = []
    help_text = (getattr(cmd, "help", None) or getattr(cmd, "short_help", None) or "").strip()
    if path:
        out.append(f"### `{path}`\n\n")
        if help_text:
            out.append(help_text.split("\n\n")[0].replace("\n", " ") + "\n\n")
        rows = []
        for p in getattr(cmd, "params", ()):
            kind = getattr(p, "param_type_name", "")
            if kind == "option":
                if getattr(p, "hidden", False):
                    continue
                names = ", ".join(f"`{o}`" for o in (*p.opts, *p.secondary_opts))
                default = p.default
                shown = "" if default is None or (p.is_flag and not default) else f"`{default}`"
                rows.append((names, _cell(getattr(p, "help", "") or ""), shown))
            elif kind == "argument":
                label = str(getattr(p, "metavar", None) or getattr(p, "name", "") or "").upper()
                help_text = getattr(p, "help", "") or ""
                rows.append((f"`{label}` (argument)", _cell(help_text), "" if p.required else "optional"))
        if rows:
            out.append(_table(("Option", "Meaning", "Default"), rows) + "\n")
    commands = getattr(cmd, "commands", None)
    if isinstance(commands, dict):
        for name in sorted(commands):
            sub = commands[name]
            if not getattr(sub, "hidden", False):
                out.extend(_click_rows(sub, f"{path} {name}".strip()))
    return out


def cli(sources: Sources) -> str:
    if sources.cli is None:
        return "The command line is not part of this build.\n"
    root = sources.cli()
    rows = _click_rows(root, "")
    out = "".join(rows).replace("### `", "### `hangar ")
    return out or "The command line has no commands in this build.\n"


GENERATORS: dict[str, Callable[[Sources], str]] = {
    "rpc-ops": rpc_ops,
    "mcp-tools": mcp_tools,
    "server-routes": server_routes,
    "domain-events": domain_events,
    "pipeline-steps": pipeline_steps,
    "cli": cli,
}


def generate(key: str, sources: Sources) -> str:
    """The markdown of one generated section; a failure becomes a visible notice, never a crash."""
    gen = GENERATORS.get(key)
    if gen is None:
        raise ValueError(f"unknown generated section {key!r}; known: {sorted(GENERATORS)}")
    try:
        return gen(sources)
    except Exception as exc:
        log.warning("site: generating the %s reference failed: %s", key, exc)
        return (
            f"This section is generated from the code, and this build could not generate it ({type(exc).__name__}).\n"
        )
