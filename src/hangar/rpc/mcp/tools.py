"""The product's MCP tools, generated from the op registry (CONTRACTS.md section 8): one tool per op that is not a
watch, named as the op, described by its docstring, taking its argument schema and answering its result schema.

Nothing here is written per op: a new op is a new tool. Watch ops are not tools (they are offered as resources).
"""

from __future__ import annotations

from typing import Any

from hangar.rpc.registry import OpRegistry, OpSpec

WORKSPACE_ID_SCHEMA: dict[str, Any] = {
    "type": "string",
    "minLength": 1,
    "description": "The workspace the call acts in (workspace-scoped ops).",
}


def is_tool(spec: OpSpec) -> bool:
    return spec.kind != "watch"


def openai_name(op_name: str) -> str:
    """A tool name without dots, for clients that refuse them (OpenAI function tools): ``workspaces__create``."""
    return op_name.replace(".", "__")


def _lean(schema: Any) -> Any:  # a copy: the registry's schemas stay as they are
    """The schema without the ``title`` pydantic writes on every field ("Createdat" for ``createdAt``): it says
    nothing the property's name does not, and every agent that lists the tools pays for it in context."""
    if not isinstance(schema, dict):
        return schema
    out = {k: v for k, v in schema.items() if not (k == "title" and isinstance(v, str))}
    for key in ("properties", "$defs", "patternProperties"):
        if isinstance(out.get(key), dict):
            out[key] = {name: _lean(sub) for name, sub in out[key].items()}
    for key in ("items", "additionalProperties", "not"):
        if isinstance(out.get(key), dict):
            out[key] = _lean(out[key])
    for key in ("anyOf", "allOf", "oneOf", "prefixItems"):
        if isinstance(out.get(key), list):
            out[key] = [_lean(sub) for sub in out[key]]
    return out


def input_schema(spec: OpSpec) -> dict[str, Any]:
    """The op's argument schema as a JSON Schema object; a workspace-scoped op also takes ``workspace_id``."""
    schema: dict[str, Any] = _lean(spec.args_model.model_json_schema(by_alias=True))
    schema["type"] = "object"
    if spec.scope == "workspace":
        schema["properties"] = {"workspace_id": WORKSPACE_ID_SCHEMA, **schema.get("properties", {})}
        schema["required"] = ["workspace_id", *schema.get("required", [])]
    else:
        schema.setdefault("properties", {})
    return schema


def output_schema(spec: OpSpec) -> dict[str, Any]:
    """The op's result schema as a JSON Schema object: a list result is wrapped as ``{"items": [...]}``."""
    schema: dict[str, Any] = _lean(spec.result_schema)
    defs = schema.pop("$defs", None)
    if schema.get("type") == "array":
        schema = {"type": "object", "properties": {"items": schema}, "required": ["items"]}
    else:
        # A union of objects stays a union, declared as an object as tools must.
        schema["type"] = "object"
    if defs:
        schema["$defs"] = defs
    return schema


def structured(wire: Any) -> dict[str, Any]:
    """``structuredContent`` for a result in wire form (a list is wrapped as ``output_schema`` says)."""
    return wire if isinstance(wire, dict) else {"items": wire}


def hints_of(spec: OpSpec) -> dict[str, Any]:
    hints: dict[str, Any] = {"title": spec.name}
    if spec.kind == "read":
        hints["readOnlyHint"] = True
    else:
        hints["readOnlyHint"] = False
        hints["destructiveHint"] = spec.kind == "destructive"
    return hints


def description(spec: OpSpec) -> str:
    """The op's own words, then who may call it: an agent reading the catalogue learns both."""
    doc = (spec.handler.__doc__ or spec.summary).strip()
    if spec.server_owner:
        who = "the server owner only"
    elif spec.scope == "workspace":
        who = f"members with the {spec.min_role.name} role or above (pass workspace_id)"
    else:
        who = "any signed-in user"
    if spec.people_only:
        who += "; people only, never an agent"
    return f"{' '.join(doc.split())}\n\nWho may call it: {who}."


def tool_of(spec: OpSpec) -> dict[str, Any]:
    return {
        "name": spec.name,
        "title": spec.name,
        "description": description(spec),
        "inputSchema": input_schema(spec),
        "outputSchema": output_schema(spec),
        "annotations": hints_of(spec),
    }


def catalogue(registry: OpRegistry) -> list[dict[str, Any]]:
    """Every tool, in the registry's (sorted) order."""
    return [tool_of(spec) for spec in registry.specs.values() if is_tool(spec)]


def op_of_openai_name(name: str) -> str:
    """The op an OpenAI-style tool name stands for (``workspaces__create`` → ``workspaces.create``). Op names never
    hold two underscores in a row (each word starts with a letter), so the spelling goes both ways."""
    return name.replace("__", ".")


def function_tool(spec: OpSpec) -> dict[str, Any]:
    """The op as an OpenAI function tool: the MCP tool's description and input schema, under a dot-free name."""
    return {
        "type": "function",
        "function": {
            "name": openai_name(spec.name),
            "description": description(spec),
            "parameters": input_schema(spec),
        },
    }
