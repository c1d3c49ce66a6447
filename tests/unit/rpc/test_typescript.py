"""The web client's typed RPC table: JSON Schema → TypeScript, the per-op table, and the committed file is current."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field

from hangar.core.event_types import DomainEvent
from hangar.rpc.context import OpContext
from hangar.rpc.frames import frames
from hangar.rpc.registry import Args, NoArgs, OpRegistry, Result, op
from hangar.rpc.typescript import Converter, TypeNames, _type_of, args_schema, pascal, render
from hangar.server import typed_client
from hangar.server.parts import all_parts


def ts(schema: Any, refs: dict[str, str] | None = None) -> str:
    return Converter(refs or {}).convert(schema, "")


def test_primitives_enums_consts_and_nullable() -> None:
    assert ts({"type": "string"}) == "string"
    assert ts({"type": "integer"}) == "number"
    assert ts({"type": "boolean"}) == "boolean"
    assert ts({"type": "null"}) == "null"
    assert ts({"enum": ["a", "b", 3]}) == '"a" | "b" | 3'
    assert ts({"const": "x"}) == '"x"'
    assert ts({"anyOf": [{"type": "string"}, {"type": "null"}]}) == "string | null"
    assert ts({"type": ["string", "null"]}) == "string | null"
    assert ts({}) == "unknown"
    assert ts(True) == "unknown"
    assert ts(False) == "never"
    # A union with an unknown member is unknown: narrowing it would claim what the schema does not.
    assert ts({"anyOf": [{"type": "string"}, {}]}) == "unknown"
    assert ts({"type": "madeup"}) == "unknown"


def test_arrays_tuples_and_refs() -> None:
    assert ts({"type": "array", "items": {"type": "string"}}) == "Array<string>"
    assert ts({"type": "array"}) == "Array<unknown>"
    assert ts({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]}) == "[string, number]"
    assert ts({"$ref": "#/$defs/Thing"}, {"#/$defs/Thing": "Thing"}) == "Thing"
    assert ts({"$ref": "#/$defs/Missing"}) == "unknown"
    items = {"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "integer"}]}}
    assert ts(items) == "Array<string | number>"
    assert ts({"allOf": [{"$ref": "#/$defs/A"}, {"$ref": "#/$defs/B"}]}, {"#/$defs/A": "A", "#/$defs/B": "B"}) == (
        "A & B"
    )


def test_objects_required_optional_and_additional_properties() -> None:
    schema = {
        "type": "object",
        "properties": {"id": {"type": "string", "description": "the id"}, "odd-key": {"type": "integer"}},
        "required": ["id"],
    }
    assert ts(schema) == '{\n  /** the id */\n  id: string;\n  "odd-key"?: number;\n}'
    assert ts({"type": "object"}) == "Record<string, unknown>"
    assert ts({"type": "object", "additionalProperties": {"type": "string"}}) == "Record<string, string>"
    assert ts({"type": "object", "additionalProperties": False}) == "Record<string, never>"
    open_obj = {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": True}
    assert ts(open_obj) == "{\n  a?: string;\n  [key: string]: unknown;\n}"


def test_defs_are_named_once_and_clashing_shapes_get_the_op_prefix() -> None:
    names = TypeNames()
    one = {"$defs": {"Item": {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}}}
    same = {"$defs": {"Item": {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}}}
    other = {"$defs": {"Item": {"type": "object", "properties": {"b": {"type": "integer"}}, "required": ["b"]}}}
    for schema, owner in ((one, "x.one"), (same, "x.same"), (other, "x.other")):
        schema.update({"type": "array", "items": {"$ref": "#/$defs/Item"}})
        _type_of(schema, owner, names)
    assert list(names.decls) == ["Item", "XOtherItem"]
    assert _type_of(other, "x.other", names) == "Array<XOtherItem>"
    assert "b: number;" in names.decls["XOtherItem"]


def test_a_recursive_definition_refers_to_itself() -> None:
    names = TypeNames()
    schema = {
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}},
                "required": ["children"],
            }
        },
        "$ref": "#/$defs/Node",
    }
    assert _type_of(schema, "tree.get", names) == "Node"
    assert "children: Array<Node>;" in names.decls["Node"]


class ThingArgs(Args):
    thing_id: str
    mode: Literal["fast", "slow"] = "fast"
    tags: list[str] = Field(default_factory=list)


class ThingView(Result):
    thing_id: str
    note: str | None


@op("things.get", kind="read", scope="workspace")
async def things_get(ctx: OpContext, args: ThingArgs) -> ThingView:
    """Read one thing."""
    raise NotImplementedError


class ThingWatchArgs(Args):
    after_seq: int | None = None


@op("things.watch", kind="watch", scope="workspace", result=ThingView, events=ThingView)
async def things_watch(ctx: OpContext, args: ThingWatchArgs) -> Any:
    """Follow things."""
    yield ThingView(thing_id="t", note=None)


@op("things.count", kind="read", scope="server")
async def things_count(ctx: OpContext, args: NoArgs) -> list[ThingView]:
    """Every thing."""
    raise NotImplementedError


def test_args_are_as_the_socket_takes_them() -> None:
    schema = args_schema(OpRegistry([things_get]).specs["things.get"])
    assert list(schema["properties"]) == ["workspace_id", "thingId", "mode", "tags"]
    assert schema["required"] == ["workspace_id", "thingId"]
    assert "workspace_id" not in args_schema(OpRegistry([things_count]).specs["things.count"])["properties"]


def test_render_writes_every_op_with_its_meta_and_types() -> None:
    text = render(OpRegistry([things_get, things_watch, things_count]), "make it")
    assert text.startswith("// Generated from the server's op registry by `make it`.")
    assert "/** Read one thing. */\nexport type ThingsGetArgs = {" in text
    assert '  mode?: "fast" | "slow";' in text
    assert "  workspace_id: string;\n  thingId: string;" in text
    assert "export type ThingsGetResult = ThingView;" in text
    assert "export type ThingView = {\n  thingId: string;\n  note: string | null;\n};" in text
    assert "export type ThingsCountArgs = Record<string, never>;" in text
    assert "export type ThingsCountResult = Array<ThingView>;" in text
    assert (
        '"things.get": { kind: "read"; scope: "workspace"; args: ThingsGetArgs; result: ThingsGetResult; '
        "event: never };"
    ) in text
    assert "/** What `things.watch` sends after its reply. */\nexport type ThingsWatchEvent = ThingView;" in text
    assert (
        '"things.watch": { kind: "watch", scope: "workspace", minRole: "guest", serverOwner: false, '
        'cursor: "afterSeq" },'
    ) in text
    assert '"things.count": { kind: "read", scope: "server", minRole: "guest", serverOwner: false },' in text


class ThingMoved(DomainEvent):
    type = "things.moved"
    thing_id: str
    to_place: str | None = None


class ThingMade(DomainEvent):
    type = "things.made"
    thing_id: str


class ThingFrame(Result):
    """A stored event about a thing."""

    model_config = ConfigDict(json_schema_extra=frames(suffix="Frame", field="thingId", emitted=True))
    seq: int
    type: str
    payload: dict[str, Any]


@op("things.follow", kind="watch", scope="workspace", result=ThingView, events=ThingFrame)
async def things_follow(ctx: OpContext, args: NoArgs) -> Any:
    """Follow the things' events."""
    yield ThingView(thing_id="t", note=None)


def test_a_watch_of_stored_events_narrows_each_frame_by_its_type() -> None:
    text = render(OpRegistry([things_follow]), "make it", [ThingMoved, ThingMade])
    assert "export type ThingsFollowEvent = ThingFrame;" in text
    assert "export type ThingFrame = ThingsMadeFrame | ThingsMovedFrame | EmittedFrame;" in text
    assert (
        'export type ThingsMovedFrame = {\n  seq: number;\n  type: "things.moved";\n  payload: ThingsMoved;\n};'
    ) in text
    # The payload is camelCase, every field present, and the workspace (the event's holder) left out.
    assert "export type ThingsMoved = {\n  thingId: string;\n  toPlace: string | null;\n};" in text
    # An emitted event's payload is whatever JSON object its author sent: typed as JSON (an index signature, which
    # TypeScript lets refer back to the value type), not as an open record of unknowns.
    assert "export type EmittedFrame = {\n  seq: number;\n  type: string;\n  payload: JsonObject;" in text
    assert "export type JsonObject = { [key: string]: JsonValue };" in text
    assert "export type JsonValue = string | number | boolean | null | Array<JsonValue> | JsonObject;" in text


def test_render_lists_the_declared_event_types_once_in_order() -> None:
    text = render(OpRegistry([things_count]), "make it", [ThingMoved, ThingMade, ThingMoved])
    assert 'export const EVENT_TYPES = [\n  "things.made",\n  "things.moved",\n] as const;' in text
    assert "export type EventType = (typeof EVENT_TYPES)[number];" in text


def test_every_event_type_a_part_declares_reaches_the_client() -> None:
    """The client's label table is checked against ``EVENT_TYPES`` (web/src/labels.test.ts); this keeps that list
    the server's own."""
    committed = typed_client.TARGET.read_text(encoding="utf-8")
    for event in (e for p in all_parts() for e in p.events):
        assert f'  "{event.type}",\n' in committed, event.type


def test_pascal_names() -> None:
    assert pascal("members.setRole") == "MembersSetRole"
    assert pascal("rig.watch") == "RigWatch"
    assert pascal("snake_case.thing") == "SnakeCaseThing"


def test_the_committed_client_types_are_current() -> None:
    committed = typed_client.TARGET.read_text(encoding="utf-8")
    assert committed == typed_client.generated(), (
        f"web/src/generated/ops.ts is stale (the op registry changed); regenerate it with: {typed_client.COMMAND}"
    )
    assert typed_client.main(["--check"]) == 0
