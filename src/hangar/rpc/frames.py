"""Typed event frames: how an envelope of stored domain events declares which events it carries.

A watch that streams stored domain events (``events.watch``, ``spaces.watch``) and a result that lists them
(``events.list``, ``runs.events``) send each in an envelope model: its own fields (``seq``, a time) around the
event's ``type`` and ``payload``. The envelope is declared once, with ``payload`` an object; which event types it
carries is a property of the composed server (the parts that declare them), so the envelope says it as data
(``frames``): the events whose payload has a field, those of a type prefix, and whether events people or scripts
emit (``pipelines.emit``: any other type, payload as given) come too. ``resolve`` turns an envelope in a JSON
Schema into the union of one frame per event type, ``type`` that type's name and ``payload`` its model, so the
generated client narrows a frame by ``type`` and the reference pages show each event's shape.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from hangar.core.event_types import DomainEvent

MARK = "x-eventFrames"


def frames(*, suffix: str, field: str | None = None, prefix: str | None = None, emitted: bool = False) -> Any:
    """The ``json_schema_extra`` of an envelope model: its frames are named ``<PayloadName><suffix>``, and carry the
    declared events whose payload has ``field`` (camelCase) and whose type starts with ``prefix``; ``emitted``:
    also events no part declares."""
    return {MARK: {"suffix": suffix, "field": field, "prefix": prefix, "emitted": emitted}}


# An emitted event's payload is whatever JSON object its author sent: typed as JSON, not as an open record.
JSON_DEFS: dict[str, Any] = {
    "JsonValue": {
        "title": "JsonValue",
        "description": "Any JSON value.",
        "anyOf": [
            {"type": "string"},
            {"type": "number"},
            {"type": "boolean"},
            {"type": "null"},
            {"type": "array", "items": {"$ref": "#/$defs/JsonValue"}},
            {"$ref": "#/$defs/JsonObject"},
        ],
    },
    "JsonObject": {
        "title": "JsonObject",
        "description": "A JSON object.",
        "type": "object",
        "additionalProperties": {"$ref": "#/$defs/JsonValue"},
    },
}


def payload_name(cls: type[DomainEvent]) -> str:
    """The name of an event's payload definition: its type in PascalCase (``agents.runStarted`` →
    ``AgentsRunStarted``), unique across parts as the type is."""
    return "".join(p[:1].upper() + p[1:] for p in re.split(r"[._\-]+", cls.type) if p)


def payload_schema(cls: type[DomainEvent]) -> dict[str, Any]:
    """The wire form of an event's payload (camelCase, every field present, ``workspace_id`` left out)."""
    return cls.model_json_schema(by_alias=True, mode="serialization", ref_template="#/$defs/{model}")


def selected(mark: Mapping[str, Any], classes: Iterable[type[DomainEvent]]) -> list[type[DomainEvent]]:
    field, prefix = mark.get("field"), mark.get("prefix")
    out = []
    for cls in sorted(classes, key=lambda c: c.type):
        wire_fields = {info.alias or name for name, info in cls.model_fields.items()}
        if (field is None or field in wire_fields) and (prefix is None or cls.type.startswith(prefix)):
            out.append(cls)
    return out


def resolve(schema: dict[str, Any], classes: Iterable[type[DomainEvent]]) -> dict[str, Any]:
    """``schema`` with every envelope in its ``$defs`` (or the schema itself) replaced by the union of its frames."""
    classes = list(classes)
    defs: dict[str, Any] = dict(schema.get("$defs") or {})
    body = {k: v for k, v in schema.items() if k != "$defs"}
    for name, sub in list(defs.items()):
        if isinstance(sub, dict) and MARK in sub:
            defs[name] = _union(sub, classes, defs)
    if MARK in body:
        body = _union(body, classes, defs)
    return {**body, "$defs": defs} if defs else body


def _union(envelope: dict[str, Any], classes: list[type[DomainEvent]], defs: dict[str, Any]) -> dict[str, Any]:
    mark = envelope[MARK]
    plain = {k: v for k, v in envelope.items() if k != MARK}
    members: list[dict[str, Any]] = []
    for cls in selected(mark, classes):
        payload, name = payload_schema(cls), payload_name(cls)
        defs.update(payload.pop("$defs", {}))
        defs.setdefault(name, {**payload, "title": name})
        frame_name = name + mark["suffix"]
        props = dict(plain.get("properties") or {})
        props["type"] = {"const": cls.type, "type": "string"}
        props["payload"] = {"$ref": f"#/$defs/{name}"}
        shared = {k: v for k, v in plain.items() if k != "description"}  # the payload's model describes it
        defs[frame_name] = {**shared, "title": frame_name, "properties": props}
        members.append({"$ref": f"#/$defs/{frame_name}"})
    if mark.get("emitted"):
        emitted = f"Emitted{mark['suffix']}"
        props = {**(plain.get("properties") or {}), "payload": {"$ref": "#/$defs/JsonObject"}}
        defs.update(JSON_DEFS)
        defs[emitted] = {
            **plain,
            "title": emitted,
            "description": "An event a person or script emitted.",
            "properties": props,
        }
        members.append({"$ref": f"#/$defs/{emitted}"})
    if not members:
        return plain
    return {"oneOf": members, "title": plain.get("title"), "description": plain.get("description", "")}
