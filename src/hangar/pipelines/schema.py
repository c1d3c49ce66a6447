"""The JSON Schema subset ``outputSchema`` may use, checked and applied with the ``jsonschema`` library.

The subset is itself written as a JSON Schema (``SUBSET``): a template's or an agent run's schema is validated
against it when it is given, so a keyword we do not honour is refused instead of silently ignored (``$ref`` in
particular, which would make validation follow references). Values are validated with jsonschema's Draft 2020-12
validator. What stays ours is the wording: one message naming the JSON path of the first violation
(``$.findings[2].severity: "urgent" is not one of ["low", "high"]``), so an agent told why its payload was
refused can fix it and retry.

Keywords: ``type`` (a name or a list of names), ``properties``, ``required``, ``additionalProperties`` (bool or
schema), ``items``, ``enum``, ``const``, ``minimum``, ``maximum``, ``exclusiveMinimum``, ``exclusiveMaximum``,
``minLength``, ``maxLength``, ``pattern``, ``minItems``, ``maxItems``, ``uniqueItems``, ``minProperties``,
``maxProperties``, ``anyOf``; annotations (``title``, ``description``, ``default``, ``examples``, ``$schema``,
``$id``, ``$comment``) are accepted and ignored.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator, ValidationError

TYPES: frozenset[str] = frozenset({"object", "array", "string", "number", "integer", "boolean", "null"})
_ANNOTATIONS = ("title", "description", "default", "examples", "$schema", "$id", "$comment")
_NUMERIC = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
_COUNTS = ("minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties")
_SCHEMA = {"$ref": "#"}
_TYPE_NAME = {"enum": sorted(TYPES)}
SUBSET: dict[str, Any] = {
    "type": "object",
    "properties": {
        "type": {
            "if": {"type": "array"},
            "then": {"minItems": 1, "items": _TYPE_NAME},
            "else": _TYPE_NAME,
        },
        "properties": {"type": "object", "additionalProperties": _SCHEMA},
        "required": {"type": "array", "items": {"type": "string"}},
        "additionalProperties": {"if": {"type": "boolean"}, "else": _SCHEMA},
        "items": _SCHEMA,
        "enum": {"type": "array", "minItems": 1},
        "const": True,
        "pattern": {"type": "string", "format": "regex"},
        "uniqueItems": {"type": "boolean"},
        "anyOf": {"type": "array", "minItems": 1, "items": _SCHEMA},
        **{key: {"type": "number"} for key in _NUMERIC},
        **{key: {"type": "integer", "minimum": 0} for key in _COUNTS},
        **{key: True for key in _ANNOTATIONS},
        "$schema": {"type": "string"},  # not followed: values are always checked as Draft 2020-12
        "$id": {"type": "string"},  # nothing refers to it: ``$ref`` is not in the subset
    },
    "additionalProperties": False,
}
KEYWORDS: frozenset[str] = frozenset(SUBSET["properties"]) - frozenset(_ANNOTATIONS)


# The validators are built on first use, with jsonschema imported then: importing jsonschema loads every draft's
# metaschema (a noticeable part of the server's start-up), and most processes never check an output schema.
@functools.cache
def _subset_check() -> Draft202012Validator:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(SUBSET, format_checker=Draft202012Validator.FORMAT_CHECKER)


@functools.cache
def _validator() -> type[Draft202012Validator]:
    """Draft 2020-12 where Python values count too (a body's output may hold tuples or other mappings before it is
    stored as JSON)."""
    from jsonschema import Draft202012Validator, validators

    extend: Callable[..., type[Draft202012Validator]] = validators.extend  # the stubs leave it untyped
    return extend(
        Draft202012Validator,
        type_checker=Draft202012Validator.TYPE_CHECKER.redefine_many(
            {
                "array": lambda _checker, value: isinstance(value, list | tuple),
                "object": lambda _checker, value: isinstance(value, Mapping),
            }
        ),
    )


def _where(root: str, path: Iterable[str | int]) -> str:
    return root + "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in path)


def check_schema(schema: Any, path: str = "outputSchema") -> list[str]:
    """Problems with the schema itself (unsupported keyword, bad type name...), each naming where."""
    problems: list[str] = []
    for error in _subset_check().iter_errors(schema):
        where = _where(path, error.absolute_path)
        if error.validator == "additionalProperties":
            problems += [
                f"{where}.{key}: keyword {key!r} is not supported (supported: {', '.join(sorted(KEYWORDS))})"
                for key in error.instance
                if key not in SUBSET["properties"]
            ]
        elif error.validator == "type":
            wanted = str(error.validator_value)
            problems.append(f"{where} must be {'an' if wanted[0] in 'aeiou' else 'a'} {wanted}")
        elif error.validator == "enum":
            problems.append(f"{where}: {error.instance!r} is not a type (types: {', '.join(sorted(TYPES))})")
        elif error.validator == "minItems":
            problems.append(f"{where} must not be empty")
        elif error.validator == "minimum":
            problems.append(f"{where} must be a non-negative integer")
        elif error.validator == "format":  # only ``pattern`` has one: the cause is Python's reason
            problems.append(f"{where}: {error.cause}")
        else:
            problems.append(f"{where}: {error.message}")
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


def _short(value: Any) -> str:
    text = json.dumps(value, default=str, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def _names(types: Any) -> str:
    return " or ".join(types) if isinstance(types, list) else str(types)


def _missing(value: Mapping[str, Any], names: list[str]) -> str:
    return next((repr(name) for name in names if name not in value), "?")


# keyword -> what a violation of it says, given the value and the keyword's setting
_WORDING: dict[str, Callable[[Any, Any], str]] = {
    "type": lambda value, want: f"expected {_names(want)}, got {_type_of(value)}",
    "const": lambda value, want: f"must equal {_short(want)}",
    "enum": lambda value, want: f"{_short(value)} is not one of {_short(want)}",
    "anyOf": lambda value, want: "matches none of the anyOf schemas",
    "minimum": lambda value, want: f"{value} is less than the minimum {want}",
    "maximum": lambda value, want: f"{value} is more than the maximum {want}",
    "exclusiveMinimum": lambda value, want: f"{value} must be more than {want}",
    "exclusiveMaximum": lambda value, want: f"{value} must be less than {want}",
    "minLength": lambda value, want: f"shorter than {want} characters",
    "maxLength": lambda value, want: f"longer than {want} characters",
    "pattern": lambda value, want: f"{_short(value)} does not match the pattern {want!r}",
    "minItems": lambda value, want: f"fewer than {want} items",
    "maxItems": lambda value, want: f"more than {want} items",
    "required": lambda value, want: f"missing required property {_missing(value, want)}",
    "minProperties": lambda value, want: f"fewer than {want} properties",
    "maxProperties": lambda value, want: f"more than {want} properties",
}


# which violation to report when there are several: the shallowest, at one place these keywords first (a wrong
# type explains every other complaint about the same value), then by path, so the same payload always gets the
# same message (jsonschema visits extra properties in set order)
_FIRST = ("type", "const", "enum", "anyOf")


def _rank(error: ValidationError) -> tuple[int, int, list[tuple[int, str]]]:
    keyword = str(error.validator)
    path = [(part, "") if isinstance(part, int) else (-1, part) for part in error.absolute_path]
    return len(path), _FIRST.index(keyword) if keyword in _FIRST else len(_FIRST), path


def _message(error: ValidationError) -> str:
    where = _where("$", error.absolute_path)
    value: Any = error.instance
    if error.validator == "additionalProperties":  # only ``false`` fails here; a schema's errors come from within
        declared = error.schema.get("properties", {}) if isinstance(error.schema, Mapping) else {}
        extra = next((name for name in value if name not in declared), "?")
        return f"{where}.{extra}: property not allowed (additionalProperties is false)"
    if error.validator == "uniqueItems":
        seen: set[str] = set()
        for index, item in enumerate(value):
            key = json.dumps(item, sort_keys=True, default=str)
            if key in seen:
                return f"{where}[{index}]: duplicates an earlier item"
            seen.add(key)
        return f"{where}: items are not unique"  # equal only as jsonschema compares (1 and 1.0)
    wording = _WORDING.get(str(error.validator))
    return f"{where}: {wording(value, error.validator_value) if wording else error.message}"


def first_violation(value: Any, schema: Mapping[str, Any]) -> str | None:
    """Where and how ``value`` breaks ``schema`` (a schema ``check_schema`` accepted), as ``<path>: <what>``;
    ``None`` when it conforms."""
    errors = list(_validator()(schema).iter_errors(value))
    return _message(min(errors, key=_rank)) if errors else None
