"""Output schemas: the JSON Schema a dispatcher gives for an agent's ``submit_output`` payload.

Validation uses the ``jsonschema`` library (Draft 2020-12) rather than a hand-written subset, so every keyword
a template author knows behaves as documented. Messages name the failing location, so an agent told why its
payload was refused can fix it and retry.
"""

from __future__ import annotations

from typing import Any

import jsonschema
from jsonschema.exceptions import SchemaError

from hangar.errors import InvalidArgs

Validator = jsonschema.Draft202012Validator


def check_schema(schema: Any, field: str = "outputSchema") -> dict[str, Any]:
    """The schema itself must be a JSON Schema object; otherwise ``InvalidArgs`` naming ``field``."""
    if not isinstance(schema, dict):
        raise InvalidArgs(f"{field} must be a JSON Schema object", field=field)
    try:
        Validator.check_schema(schema)
    except SchemaError as exc:
        where = "/".join(str(p) for p in exc.path) or "(root)"
        raise InvalidArgs(f"{field} is not a valid JSON Schema at {where}: {exc.message}", field=field) from None
    return schema


def violations(schema: dict[str, Any], payload: Any, *, limit: int = 5) -> list[str]:
    """Why ``payload`` does not satisfy ``schema`` (empty when it does), each naming its JSON path."""
    out: list[str] = []
    for err in sorted(Validator(schema).iter_errors(payload), key=lambda e: list(e.path)):
        where = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err.path)
        out.append(f"{where}: {err.message}")
        if len(out) >= limit:
            break
    return out


def as_tool_parameters(schema: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """Function-tool parameters for ``submit_output``: an object schema as is, anything else wrapped under
    ``output`` (function parameters must be an object). Returns (parameters, wrapped)."""
    if schema.get("type") == "object":
        return schema, False
    return {"type": "object", "properties": {"output": schema}, "required": ["output"]}, True
