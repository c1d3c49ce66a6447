"""A small validator for the JSON Schema subset ``outputSchema`` may use.

Why our own: the subset is small, and we want one message naming the path of the first violation
(``$.findings[2].severity: 'urgent' is not one of ['low', 'high']``) plus a load-time check that a template's
schema only uses keywords we honour, instead of silently ignoring the rest.

Keywords: ``type`` (a name or a list of names), ``properties``, ``required``, ``additionalProperties`` (bool or
schema), ``items``, ``enum``, ``const``, ``minimum``, ``maximum``, ``exclusiveMinimum``, ``exclusiveMaximum``,
``minLength``, ``maxLength``, ``pattern``, ``minItems``, ``maxItems``, ``uniqueItems``, ``minProperties``,
``maxProperties``, ``anyOf``; annotations (``title``, ``description``, ``default``, ``examples``, ``$schema``,
``$id``, ``$comment``) are accepted and ignored.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

TYPES: frozenset[str] = frozenset({"object", "array", "string", "number", "integer", "boolean", "null"})
_ANNOTATIONS = frozenset({"title", "description", "default", "examples", "$schema", "$id", "$comment"})
_NUMERIC = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
_COUNTS = ("minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties")
KEYWORDS: frozenset[str] = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "const",
        "pattern",
        "uniqueItems",
        "anyOf",
        *_NUMERIC,
        *_COUNTS,
    }
)


def check_schema(schema: Any, path: str = "outputSchema") -> list[str]:
    """Problems with the schema itself (unsupported keyword, bad type name...), each naming where."""
    if not isinstance(schema, Mapping):
        return [f"{path} must be an object"]
    problems: list[str] = []
    for key, value in schema.items():
        where = f"{path}.{key}"
        if key in _ANNOTATIONS:
            continue
        if key not in KEYWORDS:
            problems.append(f"{where}: keyword {key!r} is not supported (supported: {', '.join(sorted(KEYWORDS))})")
        elif key == "type":
            names = value if isinstance(value, list) else [value]
            bad = [n for n in names if n not in TYPES]
            if bad or not names:
                problems.append(f"{where}: {bad or value!r} is not a type (types: {', '.join(sorted(TYPES))})")
        elif key == "properties":
            if not isinstance(value, Mapping):
                problems.append(f"{where} must be an object")
            else:
                for name, sub in value.items():
                    problems += check_schema(sub, f"{where}.{name}")
        elif key == "required":
            if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
                problems.append(f"{where} must be a list of property names")
        elif key == "additionalProperties":
            if not isinstance(value, bool):
                problems += check_schema(value, where)
        elif key == "items":
            problems += check_schema(value, where)
        elif key == "anyOf":
            if not (isinstance(value, list) and value):
                problems.append(f"{where} must be a non-empty list of schemas")
            else:
                for i, sub in enumerate(value):
                    problems += check_schema(sub, f"{where}[{i}]")
        elif key == "enum":
            if not isinstance(value, list) or not value:
                problems.append(f"{where} must be a non-empty list")
        elif key in _NUMERIC:
            if isinstance(value, bool) or not isinstance(value, int | float):
                problems.append(f"{where} must be a number")
        elif key in _COUNTS:
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                problems.append(f"{where} must be a non-negative integer")
        elif key == "pattern":
            try:
                re.compile(str(value))
            except re.error as exc:
                problems.append(f"{where}: {exc}")
        elif key == "uniqueItems" and not isinstance(value, bool):
            problems.append(f"{where} must be true or false")
    return problems


def _type_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def _is(value: Any, name: str) -> bool:
    actual = _type_of(value)
    if name == "number":
        return actual in ("integer", "number")
    if name == "integer":
        return actual == "integer" or (actual == "number" and float(value).is_integer())
    return actual == name


def _short(value: Any) -> str:
    text = json.dumps(value, default=str, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def first_violation(value: Any, schema: Mapping[str, Any], path: str = "$") -> str | None:
    """The first place ``value`` breaks ``schema``, as ``<path>: <what>``; ``None`` when it conforms."""
    if "type" in schema:
        names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_is(value, n) for n in names):
            return f"{path}: expected {' or '.join(names)}, got {_type_of(value)}"
    if "const" in schema and value != schema["const"]:
        return f"{path}: must equal {_short(schema['const'])}"
    if "enum" in schema and value not in schema["enum"]:
        return f"{path}: {_short(value)} is not one of {_short(schema['enum'])}"
    if "anyOf" in schema and all(first_violation(value, sub, path) is not None for sub in schema["anyOf"]):
        return f"{path}: matches none of the anyOf schemas"
    kind = _type_of(value)
    if kind in ("integer", "number"):
        if "minimum" in schema and value < schema["minimum"]:
            return f"{path}: {value} is less than the minimum {schema['minimum']}"
        if "maximum" in schema and value > schema["maximum"]:
            return f"{path}: {value} is more than the maximum {schema['maximum']}"
        if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
            return f"{path}: {value} must be more than {schema['exclusiveMinimum']}"
        if "exclusiveMaximum" in schema and value >= schema["exclusiveMaximum"]:
            return f"{path}: {value} must be less than {schema['exclusiveMaximum']}"
    elif kind == "string":
        if "minLength" in schema and len(value) < schema["minLength"]:
            return f"{path}: shorter than {schema['minLength']} characters"
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            return f"{path}: longer than {schema['maxLength']} characters"
        if "pattern" in schema and re.search(schema["pattern"], value) is None:
            return f"{path}: {_short(value)} does not match the pattern {schema['pattern']!r}"
    elif kind == "array":
        if "minItems" in schema and len(value) < schema["minItems"]:
            return f"{path}: fewer than {schema['minItems']} items"
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            return f"{path}: more than {schema['maxItems']} items"
        if schema.get("uniqueItems"):
            seen: set[str] = set()
            for i, item in enumerate(value):
                key = json.dumps(item, sort_keys=True, default=str)
                if key in seen:
                    return f"{path}[{i}]: duplicates an earlier item"
                seen.add(key)
        items = schema.get("items")
        if isinstance(items, Mapping):
            for i, item in enumerate(value):
                found = first_violation(item, items, f"{path}[{i}]")
                if found:
                    return found
    elif kind == "object":
        for name in schema.get("required", ()):
            if name not in value:
                return f"{path}: missing required property {name!r}"
        if "minProperties" in schema and len(value) < schema["minProperties"]:
            return f"{path}: fewer than {schema['minProperties']} properties"
        if "maxProperties" in schema and len(value) > schema["maxProperties"]:
            return f"{path}: more than {schema['maxProperties']} properties"
        props: Mapping[str, Any] = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        for name, item in value.items():
            sub = props.get(name)
            where = f"{path}.{name}"
            if sub is not None:
                found = first_violation(item, sub, where)
                if found:
                    return found
            elif extra is False:
                return f"{where}: property not allowed (additionalProperties is false)"
            elif isinstance(extra, Mapping):
                found = first_violation(item, extra, where)
                if found:
                    return found
    return None
