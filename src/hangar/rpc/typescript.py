"""The web client's typed RPC table, generated from the op registry (CONTRACTS.md section 9): for every op its
name, kind, scope and the TypeScript types of its arguments (as the socket takes them: camelCase, plus
``workspace_id`` for a workspace-scoped op), of its result (``OpSpec.result_schema``) and, for a watch, of its
events (``OpSpec.events_schema``). Envelopes of stored domain events become a union of one frame per event type
the server's parts declare (``hangar.rpc.frames``), so a screen narrows a frame by its ``type``.

The JSON Schema → TypeScript conversion is written here rather than taken from an npm tool so that the generator
runs with the server's own Python, reads the registry directly and needs no network: it covers what pydantic
emits (``$defs``/``$ref``, ``enum``/``const``, nullable ``anyOf``, arrays and tuples, objects with
``additionalProperties``, ``allOf``/``oneOf``). A schema it does not understand becomes ``unknown``, never a guess.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from hangar.core.event_types import DomainEvent
from hangar.errors import ERROR_CODES
from hangar.rpc.frames import resolve
from hangar.rpc.registry import OpRegistry, OpSpec

HEADER = """\
// Generated from the server's op registry by `{command}`. Do not edit: a test fails when this file is stale.
/* eslint-disable */
"""

_IDENT = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")
_PRIMITIVES = {"string": "string", "integer": "number", "number": "number", "boolean": "boolean", "null": "null"}


def pascal(name: str) -> str:
    """``workspaces.list`` → ``WorkspacesList``; ``members.setRole`` → ``MembersSetRole``."""
    return "".join(p[:1].upper() + p[1:] for p in re.split(r"[._\-\s]+", name) if p)


def prop_key(name: str) -> str:
    return name if _IDENT.match(name) else json.dumps(name)


def literal(value: Any) -> str:
    if value is None or isinstance(value, bool | int | float | str):
        return json.dumps(value)
    return "unknown"  # an object or array constant has no useful literal type


def _comment(text: str | None, indent: str) -> str:
    if not text:
        return ""
    lines = " ".join(text.split()).replace("*/", "* /")
    return f"{indent}/** {lines} */\n"


@dataclass
class TypeNames:
    """Named types (``$defs``) shared by every op of the file. Pydantic names a definition after its model class;
    two different shapes under one name get the op's name in front, so no definition silently replaces another."""

    decls: dict[str, str] = field(default_factory=dict)
    _shapes: dict[str, str] = field(default_factory=dict)  # type name -> canonical schema

    def name_for(self, name: str, schema: Mapping[str, Any], owner: str) -> tuple[str, bool]:
        """The type name of a definition, and whether it is new (to be declared)."""
        shape = json.dumps(_without_titles(schema), sort_keys=True)
        candidate = pascal(name)
        if candidate in self._shapes and self._shapes[candidate] != shape:
            candidate = pascal(owner) + candidate
        if candidate in self._shapes:
            return candidate, False
        self._shapes[candidate] = shape
        return candidate, True

    def declare(self, name: str, schema: Mapping[str, Any], refs: Mapping[str, str]) -> None:
        body = Converter(refs).convert(schema, "")
        self.decls[name] = f"{_comment(schema.get('description'), '')}export type {name} = {body};\n"


def _without_titles(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: _without_titles(v) for k, v in schema.items() if not (k == "title" and isinstance(v, str))}
    if isinstance(schema, list):
        return [_without_titles(v) for v in schema]
    return schema


@dataclass
class Converter:
    """One schema to one TypeScript type expression; ``refs`` maps ``#/$defs/<name>`` to the type's name."""

    refs: Mapping[str, str]

    def convert(self, schema: Any, indent: str) -> str:
        if schema is True or schema == {}:
            return "unknown"
        if schema is False:
            return "never"
        if not isinstance(schema, Mapping):
            return "unknown"
        if "$ref" in schema:
            return self.refs.get(schema["$ref"], "unknown")
        if "const" in schema:
            return literal(schema["const"])
        if "enum" in schema:
            return " | ".join(literal(v) for v in schema["enum"]) or "never"
        for key in ("anyOf", "oneOf"):
            if key in schema:
                return self.union([self.convert(s, indent) for s in schema[key]])
        if "allOf" in schema:
            parts = [self.convert(s, indent) for s in schema["allOf"]]
            return " & ".join(_group(p) for p in parts) if len(parts) > 1 else parts[0]
        kind = schema.get("type")
        if isinstance(kind, list):
            return self.union([self.convert({**schema, "type": k}, indent) for k in kind])
        if kind in _PRIMITIVES:
            return _PRIMITIVES[kind]
        if kind == "array":
            return self.array(schema, indent)
        if kind == "object" or "properties" in schema or "additionalProperties" in schema:
            return self.object(schema, indent)
        return "unknown"

    def union(self, members: Iterable[str]) -> str:
        seen = list(dict.fromkeys(members))
        if "unknown" in seen:
            return "unknown"
        return " | ".join(_group(m) for m in seen) if len(seen) > 1 else (seen[0] if seen else "never")

    def array(self, schema: Mapping[str, Any], indent: str) -> str:
        if "prefixItems" in schema:
            items = [self.convert(s, indent) for s in schema["prefixItems"]]
            return f"[{', '.join(items)}]"
        item = self.convert(schema.get("items", True), indent)
        return f"Array<{item}>"

    def object(self, schema: Mapping[str, Any], indent: str) -> str:
        props: Mapping[str, Any] = schema.get("properties") or {}
        required = set(schema.get("required") or ())
        # Pydantic leaves ``additionalProperties`` out of a model's schema, yet a model's fields are all it sends:
        # named properties alone make a closed type; a bare object is an open record.
        extra = schema.get("additionalProperties", not props)
        extra_type = None if extra is False else self.convert(extra, indent)
        if not props:
            if isinstance(extra, Mapping) and "$ref" in extra:
                # A named value type may refer back to this one (JSON): TypeScript defers an index signature's
                # type, where ``Record<...>`` would be a circular alias.
                return f"{{ [key: string]: {extra_type} }}"
            return f"Record<string, {extra_type or 'never'}>"
        inner = indent + "  "
        lines = []
        for name, sub in props.items():
            optional = "" if name in required else "?"
            described = sub.get("description") if isinstance(sub, Mapping) else None
            lines.append(f"{_comment(described, inner)}{inner}{prop_key(name)}{optional}: {self.convert(sub, inner)};")
        if extra_type is not None:
            # An index signature must admit every named property too.
            lines.append(f"{inner}[key: string]: unknown;")
        return "{\n" + "\n".join(lines) + f"\n{indent}}}"


def _group(expr: str) -> str:
    """Parenthesize a union or intersection inside another one, for readability and correct precedence."""
    return f"({expr})" if (" | " in expr or " & " in expr) and not expr.startswith(("{", "(")) else expr


def args_schema(spec: OpSpec) -> dict[str, Any]:
    """The arguments as the socket takes them: the model's camelCase schema, ``workspace_id`` first when scoped."""
    schema: dict[str, Any] = spec.args_model.model_json_schema(by_alias=True)
    if spec.scope == "workspace":
        schema["properties"] = {
            "workspace_id": {"type": "string", "description": "The workspace the call acts in."},
            **schema.get("properties", {}),
        }
        schema["required"] = ["workspace_id", *schema.get("required", [])]
    schema["type"] = "object"
    schema.setdefault("properties", {})
    schema["additionalProperties"] = False
    return schema


def cursor_of(spec: OpSpec) -> str | None:
    """The argument a watch resumes from after a reconnect (``afterSeq``: the last event's ``seq``)."""
    props = spec.args_model.model_json_schema(by_alias=True).get("properties", {})
    return "afterSeq" if spec.kind == "watch" and "afterSeq" in props else None


def _type_of(schema: dict[str, Any], owner: str, names: TypeNames, *, named: bool = False) -> str:
    defs: Mapping[str, Any] = schema.get("$defs") or {}
    refs: dict[str, str] = {}
    new: list[tuple[str, Mapping[str, Any]]] = []
    # Every name first (a definition may refer to one declared after it, or to itself), then the bodies.
    for name, sub in defs.items():
        refs[f"#/$defs/{name}"], is_new = names.name_for(name, sub, owner)
        if is_new:
            new.append((refs[f"#/$defs/{name}"], sub))
    for type_name, sub in new:
        names.declare(type_name, sub, refs)
    body = {k: v for k, v in schema.items() if k != "$defs"}
    title = body.get("title")
    if named and isinstance(title, str) and ("properties" in body or "oneOf" in body):
        # A model answered whole keeps its model's name, as it does where another op nests it.
        type_name, is_new = names.name_for(title, body, owner)
        if is_new:
            names.declare(type_name, body, refs)
        return type_name
    return Converter(refs).convert(body, "")


def render(registry: OpRegistry, command: str, events: Iterable[type[DomainEvent]] = ()) -> str:
    """The whole ``ops.ts``: named types, one args and one result type per op (and an event type per watch), the
    ``Ops`` table and ``OPS``, the error codes, and the domain event types the server declares (``EVENT_TYPES``:
    the client labels each)."""
    classes = list(events)
    event_types = [cls.type for cls in classes]
    names = TypeNames()
    op_decls: list[str] = []
    table: list[str] = []
    meta: list[str] = []
    for name, spec in registry.specs.items():
        base = pascal(name)
        args_t = _type_of(args_schema(spec), name, names)
        result_t = _type_of(resolve(spec.result_schema, classes), name, names, named=True)
        op_decls.append(f"{_comment(spec.summary, '')}export type {base}Args = {args_t};\n")
        op_decls.append(f"export type {base}Result = {result_t};\n")
        event_t = "never"
        if spec.events_schema is not None:
            event_t = f"{base}Event"
            body = _type_of(resolve(spec.events_schema, classes), name, names, named=True)
            op_decls.append(f"/** What `{name}` sends after its reply. */\nexport type {event_t} = {body};\n")
        op_decls.append("\n")
        table.append(
            f'  {json.dumps(name)}: {{ kind: "{spec.kind}"; scope: "{spec.scope}"; '
            f"args: {base}Args; result: {base}Result; event: {event_t} }};"
        )
        cursor = cursor_of(spec)
        meta.append(
            f'  {json.dumps(name)}: {{ kind: "{spec.kind}", scope: "{spec.scope}", '
            f'minRole: "{spec.min_role.name}", serverOwner: {json.dumps(spec.server_owner)}'
            + (f", cursor: {json.dumps(cursor)}" if cursor else "")
            + " },"
        )
    out = [HEADER.format(command=command), "\n// Shared definitions\n\n"]
    out.extend(d + "\n" for d in names.decls.values())
    out.append("// Arguments and results, one pair per op\n\n")
    out.extend(op_decls)
    out.append("/** Every op: its kind, scope, argument and result types, and a watch's event type. */\n")
    out.append("export interface Ops {\n")
    out.append("\n".join(table) + "\n}\n\n")
    out.append("export type OpName = keyof Ops;\n")
    out.append('export type WatchOpName = { [N in OpName]: Ops[N]["kind"] extends "watch" ? N : never }[OpName];\n')
    out.append("export type CallOpName = Exclude<OpName, WatchOpName>;\n\n")
    out.append(
        "export interface OpMeta {\n"
        '  kind: "read" | "mutate" | "destructive" | "watch";\n'
        '  scope: "server" | "workspace";\n'
        '  minRole: "guest" | "member" | "admin" | "owner";\n'
        "  serverOwner: boolean;\n"
        "  /** The argument a watch resumes from after a reconnect: the last event's `seq`. */\n"
        '  cursor?: "afterSeq";\n'
        "}\n\n"
    )
    out.append("export const OPS: { readonly [N in OpName]: OpMeta } = {\n" + "\n".join(meta) + "\n};\n")
    codes = "\n".join(f"  {literal(code)}," for code in ERROR_CODES)
    out.append(
        "\n/** The error codes of the RPC socket (CONTRACTS.md section 2). */\n"
        f"export const ERROR_CODES = [\n{codes}\n] as const;\n"
    )
    listed = "\n".join(f"  {literal(t)}," for t in sorted(set(event_types)))
    out.append(
        "\n/** The domain event types the server's parts declare (the wire names; `events.list` shows them). */\n"
        f"export const EVENT_TYPES = [\n{listed}\n] as const;\n"
        "export type EventType = (typeof EVENT_TYPES)[number];\n"
    )
    return "".join(out)
