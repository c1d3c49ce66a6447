"""Output schemas: the JSON Schema subset a dispatcher gives for an agent's ``submit_output`` payload.

Validation is the pipelines part's (``hangar.pipelines.schema_problems`` and ``first_violation``: the subset
written as a schema, checked and applied with the ``jsonschema`` library), so a payload the agent got accepted is
exactly one the pipeline step's ``outputSchema`` check accepts too. Messages name the failing JSON path, so an
agent told why its payload was refused can fix it and retry.
"""

from __future__ import annotations

from typing import Any

from hangar.errors import InvalidArgs
from hangar.pipelines import first_violation, schema_problems


def check_schema(schema: Any, field: str = "outputSchema") -> dict[str, Any]:
    """The schema must be an object using the supported keywords; otherwise ``InvalidArgs`` naming ``field``."""
    if not isinstance(schema, dict):
        raise InvalidArgs(f"{field} must be a JSON Schema object", field=field)
    problems = schema_problems(schema, field)
    if problems:
        raise InvalidArgs(problems[0], field=field)
    return schema


def violation(schema: dict[str, Any], payload: Any) -> str | None:
    """Why ``payload`` does not satisfy ``schema`` (``None`` when it does), naming the JSON path."""
    return first_violation(payload, schema)


def as_tool_parameters(schema: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """Function-tool parameters for ``submit_output``: an object schema as is, anything else wrapped under
    ``output`` (function parameters must be an object). Returns (parameters, wrapped)."""
    if schema.get("type") == "object":
        return schema, False
    return {"type": "object", "properties": {"output": schema}, "required": ["output"]}, True
