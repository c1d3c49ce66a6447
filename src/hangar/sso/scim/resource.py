"""Checking SCIM payloads against the schema and putting them in canonical form.

``canonical`` is applied to every POST and PUT body and to every PATCH result before anything is stored: keys take
their schema spelling (names are case-insensitive on the wire), values are type-checked with the attribute named
in the error, ``"True"``/``"False"`` strings become booleans (some identity providers send them), read-only and
unknown attributes are dropped (RFC 7644 §3.3 lets a provider ignore them), and at most one value of a
multi-valued attribute may be ``primary``.
"""

from __future__ import annotations

from typing import Any

from hangar.sso.scim.errors import ScimBadRequest
from hangar.sso.scim.filter import FilterSyntaxError, parse_attr_path
from hangar.sso.scim.match import FilterSemanticError, parse_datetime
from hangar.sso.scim.schema import AttrDef, ResourceSchema

# Returned by us, never taken from a client.
IGNORED_ON_WRITE = frozenset({"schemas", "id", "meta", "password", "groups"})


def _bool(value: Any, where: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise ScimBadRequest("invalidValue", f"{where} must be a boolean")


def check_value(attr: AttrDef, value: Any, where: str) -> Any:
    """``value`` checked against ``attr`` (multi-valuedness included); returns the canonical value or None."""
    if value is None:
        return None
    if attr.multi:
        items = value if isinstance(value, list) else [value]
        out = [v for v in (_check_single(attr, item, f"{where}[{i}]") for i, item in enumerate(items)) if v is not None]
        if attr.complex and sum(1 for v in out if isinstance(v, dict) and v.get("primary") is True) > 1:
            raise ScimBadRequest("invalidValue", f"{where}: at most one value may be primary")
        return out or None
    if isinstance(value, list):
        raise ScimBadRequest("invalidValue", f"{where} takes a single value, not a list")
    return _check_single(attr, value, where)


def _check_single(attr: AttrDef, value: Any, where: str) -> Any:
    if value is None:
        return None
    if attr.complex:
        if not isinstance(value, dict):
            raise ScimBadRequest("invalidValue", f"{where} must be an object")
        out: dict[str, Any] = {}
        for key, sub_value in value.items():
            sub = attr.sub(key)
            if sub is None:
                continue
            checked = check_value(sub, sub_value, f"{where}.{sub.name}")
            if checked is not None:
                out[sub.name] = checked
        return out or None
    if attr.type == "boolean":
        return _bool(value, where)
    if attr.type == "integer":
        if isinstance(value, bool) or not isinstance(value, int):
            raise ScimBadRequest("invalidValue", f"{where} must be an integer")
        return value
    if attr.type == "decimal":
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ScimBadRequest("invalidValue", f"{where} must be a number")
        return value
    if not isinstance(value, str):
        raise ScimBadRequest("invalidValue", f"{where} must be a string")
    if attr.type == "dateTime":
        try:
            parse_datetime(value)
        except FilterSemanticError:
            raise ScimBadRequest("invalidValue", f"{where} must be an ISO 8601 timestamp") from None
    return value


def canonical(schema: ResourceSchema, payload: Any) -> dict[str, Any]:
    """The writable attributes of ``payload`` in canonical form (see the module docstring)."""
    if not isinstance(payload, dict):
        raise ScimBadRequest("invalidSyntax", "the request body must be a JSON object")
    out: dict[str, Any] = {}
    for key, value in payload.items():
        if not isinstance(key, str) or key.lower() in IGNORED_ON_WRITE:
            continue
        try:
            path = parse_attr_path(key)
        except FilterSyntaxError:
            continue
        found = schema.find(path.uri, path.attr)
        if found is None:
            continue
        ext, attr = found
        if attr.mutability == "readOnly":
            continue
        if path.sub is not None:
            sub = attr.sub(path.sub)
            if sub is None:
                continue
            value = {sub.name: value}
        checked = check_value(attr, value, attr.name if ext is None or attr.name == ext else f"{ext}:{attr.name}")
        if checked is None:
            continue
        if ext is None:
            out[attr.name] = _merge(out.get(attr.name), checked)
        elif attr.name == ext:
            out[ext] = _merge(out.get(ext), checked)
        else:
            out.setdefault(ext, {})[attr.name] = checked
    return out


def _merge(old: Any, new: Any) -> Any:
    if isinstance(old, dict) and isinstance(new, dict):
        return {**old, **new}
    return new


def require_user_name(resource: dict[str, Any]) -> str:
    name = resource.get("userName")
    if not isinstance(name, str) or not name.strip():
        raise ScimBadRequest("invalidValue", "userName is required")
    return name.strip()
