"""SCIM PATCH (RFC 7644 §3.5.2): ``add``, ``replace`` and ``remove``, applied all or nothing.

Operations run in order on a copy of the resource; the caller stores the result only when every operation
applied and the result passes ``resource.canonical``, so a failing operation leaves nothing changed. Op names are
case-insensitive. Paths are attribute paths (``name.givenName``, URN-qualified names) or value paths with an
optional sub-attribute (``emails[type eq "work"].value``).

Choices where the RFC leaves room, made for the identity providers in the field:
- ``add``/``replace`` through a value path that matches nothing creates the element when the filter is a plain
  conjunction of ``eq`` comparisons (``emails[type eq "work"].value``), as several providers expect; any other
  filter that matches nothing is ``noTarget``; so is a ``remove`` whose filter matches nothing;
- ``remove`` of a multi-valued attribute with a ``value`` removes just those values;
- setting ``primary`` on one value clears it on the others;
- a path-less ``add``/``replace`` takes an object whose keys may themselves be paths (``"name.givenName"``).
"""

from __future__ import annotations

import copy
from typing import Any

from hangar.sso.scim.errors import ScimBadRequest
from hangar.sso.scim.filter import (
    And,
    AttrPath,
    Compare,
    Filter,
    FilterSyntaxError,
    PatchPath,
    parse_attr_path,
    parse_path,
)
from hangar.sso.scim.match import FilterSemanticError, Target, bind, get_ci, matches
from hangar.sso.scim.schema import AttrDef, ResourceSchema

PATCH_URN = "urn:ietf:params:scim:api:messages:2.0:PatchOp"
OPS = ("add", "replace", "remove")


def apply_patch(schema: ResourceSchema, resource: dict[str, Any], body: Any) -> dict[str, Any]:
    """``resource`` with every operation of ``body`` applied (a new dict; ``resource`` is not touched)."""
    if not isinstance(body, dict):
        raise ScimBadRequest("invalidSyntax", "the PATCH body must be a JSON object")
    schemas = body.get("schemas")
    if schemas is not None and (not isinstance(schemas, list) or PATCH_URN not in schemas):
        raise ScimBadRequest("invalidSyntax", f"schemas must list {PATCH_URN}")
    ops = get_ci(body, "Operations")
    if not isinstance(ops, list) or not ops:
        raise ScimBadRequest("invalidSyntax", "Operations must be a non-empty list")
    work = copy.deepcopy(resource)
    for i, raw in enumerate(ops):
        _apply_operation(schema, work, raw, f"Operations[{i}]")
    return work


def _apply_operation(schema: ResourceSchema, work: dict[str, Any], raw: Any, where: str) -> None:
    if not isinstance(raw, dict):
        raise ScimBadRequest("invalidSyntax", f"{where} must be an object")
    op = get_ci(raw, "op")
    if not isinstance(op, str) or op.lower() not in OPS:
        raise ScimBadRequest("invalidSyntax", f"{where}.op must be add, replace or remove, not {op!r}")
    op = op.lower()
    path = get_ci(raw, "path")
    value = get_ci(raw, "value")
    if path is None or (isinstance(path, str) and not path.strip()):
        if op == "remove":
            raise ScimBadRequest("noTarget", f"{where}: remove needs a path")
        if not isinstance(value, dict):
            raise ScimBadRequest("invalidValue", f"{where}: without a path the value must be an object")
        for key, item in value.items():
            if key.lower() == "schemas":
                continue
            for sub_path, sub_value in _expand_key(schema, key, item, where):
                _apply_path(schema, work, op, sub_path, sub_value, f"{where}.value.{key}")
        return
    if not isinstance(path, str):
        raise ScimBadRequest("invalidPath", f"{where}.path must be a string")
    if op != "remove" and "value" not in {k.lower() for k in raw}:
        raise ScimBadRequest("invalidValue", f"{where}: {op} needs a value")
    try:
        parsed = parse_path(path)
    except FilterSyntaxError as exc:
        raise ScimBadRequest("invalidPath", f"{where}.path: {exc}") from None
    _apply_path(schema, work, op, parsed, value, f"{where}.path")


def _expand_key(schema: ResourceSchema, key: str, value: Any, where: str) -> list[tuple[PatchPath, Any]]:
    """A path-less value's key as paths: an extension URN with an object expands to one path per attribute."""
    try:
        attr_path = parse_attr_path(key)
    except FilterSyntaxError as exc:
        raise ScimBadRequest("invalidPath", f"{where}.value: {exc}") from None
    found = schema.find(attr_path.uri, attr_path.attr)
    if found is not None and found[1].name == found[0] and isinstance(value, dict):
        urn = found[0]
        return [(PatchPath(AttrPath(urn, k)), v) for k, v in value.items()]
    return [(PatchPath(attr_path), value)]


def _resolve(schema: ResourceSchema, path: PatchPath, where: str) -> Target:
    found = schema.find(path.attr.uri, path.attr.attr)
    if found is None:
        raise ScimBadRequest("invalidPath", f"{where}: {path.attr} is not an attribute of this resource")
    ext, attr = found
    sub_name = path.attr.sub or path.sub
    sub: AttrDef | None = None
    if sub_name is not None:
        sub = attr.sub(sub_name)
        if sub is None:
            raise ScimBadRequest("invalidPath", f"{where}: {attr.name} has no sub-attribute {sub_name!r}")
    if path.filter is not None and not attr.complex:
        raise ScimBadRequest("invalidPath", f"{where}: {attr.name} is not complex; it takes no value filter")
    for part in (attr, sub):
        if part is not None and part.mutability == "readOnly":
            raise ScimBadRequest("mutability", f"{where}: {part.name} is read-only")
    return Target(ext, attr, sub)


def _container(work: dict[str, Any], target: Target, create: bool) -> dict[str, Any] | None:
    if target.ext is None or target.attr.name == target.ext:
        return work
    key = _canonical_key(work, target.ext)
    found = work.get(key)
    if isinstance(found, dict):
        return found
    if not create:
        return None
    work[key] = {}
    return work[key]  # type: ignore[no-any-return]


def _canonical_key(obj: dict[str, Any], name: str) -> str:
    """Rename any differently-cased spelling of ``name`` in ``obj`` to ``name`` and return it."""
    low = name.lower()
    for key in list(obj):
        if key.lower() == low and key != name:
            obj[name] = obj.pop(key)
    return name


def _apply_path(schema: ResourceSchema, work: dict[str, Any], op: str, path: PatchPath, value: Any, where: str) -> None:
    target = _resolve(schema, path, where)
    attr, sub = target.attr, target.sub
    if op != "remove" and value is None:
        raise ScimBadRequest("invalidValue", f"{where}: {op} needs a value")
    if attr.mutability == "immutable" and op != "remove":
        cont = _container(work, target, False)
        if cont is not None and get_ci(cont, attr.name) is not None:
            raise ScimBadRequest("mutability", f"{where}: {attr.name} is immutable once set")
    cont = _container(work, target, op != "remove")
    if cont is None:
        return
    key = _canonical_key(cont, attr.name)
    if path.filter is not None:
        _apply_filtered(schema, cont, key, target, op, path, value, where)
        return
    current = cont.get(key)
    if sub is not None:
        _apply_sub(cont, key, attr, sub, op, value, where)
        return
    if op == "remove":
        if attr.required:
            raise ScimBadRequest("invalidValue", f"{where}: {attr.name} is required and cannot be removed")
        if value is not None and attr.multi and isinstance(current, list):
            doomed = value if isinstance(value, list) else [value]
            cont[key] = [item for item in current if not any(_same_value(item, d) for d in doomed)]
        else:
            cont.pop(key, None)
        return
    if attr.multi:
        new = value if isinstance(value, list) else [value]
        if op == "add" and isinstance(current, list):
            merged = list(current)
            for item in new:
                if not any(_same_value(item, old) for old in merged):
                    merged.append(item)
            cont[key] = merged
        else:
            cont[key] = list(new)
        _one_primary(cont[key], set(range(len(cont[key]) - len(new), len(cont[key]))))
        return
    if attr.complex and isinstance(value, dict) and isinstance(current, dict):
        # RFC 7644 §3.5.2.3: sub-attributes not named keep their values.
        cont[key] = {**current, **value}
        return
    cont[key] = value


def _apply_sub(cont: dict[str, Any], key: str, attr: AttrDef, sub: AttrDef, op: str, value: Any, where: str) -> None:
    current = cont.get(key)
    if attr.multi:
        items = current if isinstance(current, list) else []
        if op == "remove":
            for item in items:
                if isinstance(item, dict):
                    _pop_ci(item, sub.name)
            return
        if not items:
            cont[key] = [{sub.name: value}]
            return
        for item in items:
            if isinstance(item, dict):
                _pop_ci(item, sub.name)
                item[sub.name] = value
        return
    if op == "remove":
        if isinstance(current, dict):
            _pop_ci(current, sub.name)
        return
    holder = current if isinstance(current, dict) else {}
    _pop_ci(holder, sub.name)
    holder[sub.name] = value
    cont[key] = holder


def _apply_filtered(
    schema: ResourceSchema,
    cont: dict[str, Any],
    key: str,
    target: Target,
    op: str,
    path: PatchPath,
    value: Any,
    where: str,
) -> None:
    assert path.filter is not None
    outer = Target(target.ext, target.attr, None)
    try:
        inner = bind(schema, path.filter, outer)
    except FilterSemanticError as exc:
        raise ScimBadRequest("invalidFilter", f"{where}: {exc}") from None
    current = cont.get(key)
    items: list[Any] = current if isinstance(current, list) else ([current] if isinstance(current, dict) else [])
    hits = [i for i, item in enumerate(items) if isinstance(item, dict) and matches(inner, {}, item)]
    sub = target.sub
    if not hits:
        seed = _eq_seed(path.filter) if op != "remove" else None
        if seed is None:
            raise ScimBadRequest("noTarget", f"{where}: no value of {target.attr.name} matches the filter")
        element = {**seed, **({sub.name: value} if sub is not None else value if isinstance(value, dict) else {})}
        items.append(element)
        hits = [len(items) - 1]
    elif op == "remove":
        if sub is None:
            items = [item for i, item in enumerate(items) if i not in hits]
        else:
            for i in hits:
                _pop_ci(items[i], sub.name)
    else:
        for i in hits:
            if sub is not None:
                _pop_ci(items[i], sub.name)
                items[i][sub.name] = value
            elif not isinstance(value, dict):
                raise ScimBadRequest("invalidValue", f"{where}: the value for a filtered path must be an object")
            elif op == "replace":
                items[i] = dict(value)
            else:
                items[i] = {**items[i], **value}
    if target.attr.multi:
        cont[key] = items
        if op != "remove":
            _one_primary(items, set(hits))
    elif items:
        cont[key] = items[0]
    else:
        cont.pop(key, None)


def _eq_seed(flt: Filter) -> dict[str, Any] | None:
    """The sub-attribute values a filter made only of ``eq`` comparisons joined by ``and`` pins down."""
    if isinstance(flt, Compare) and flt.op == "eq" and flt.value is not None and flt.path.sub is None:
        return {flt.path.attr: flt.value}
    if isinstance(flt, And):
        left, right = _eq_seed(flt.left), _eq_seed(flt.right)
        if left is not None and right is not None:
            return {**left, **right}
    return None


def _pop_ci(obj: dict[str, Any], name: str) -> None:
    for k in [k for k in obj if k.lower() == name.lower()]:
        del obj[k]


def _same_value(a: Any, b: Any) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        va, vb = get_ci(a, "value"), get_ci(b, "value")
        if va is not None or vb is not None:
            ta, tb = get_ci(a, "type"), get_ci(b, "type")
            return bool(va == vb and (ta is None or tb is None or ta == tb))
    return bool(a == b)


def _one_primary(items: list[Any], touched: set[int]) -> None:
    """When this operation made a value primary, the others stop being primary."""
    made_primary = any(
        isinstance(items[i], dict) and get_ci(items[i], "primary") in (True, "true", "True") for i in touched
    )
    if not made_primary:
        return
    for i, item in enumerate(items):
        if i not in touched and isinstance(item, dict) and get_ci(item, "primary") not in (None, False):
            _pop_ci(item, "primary")
            item["primary"] = False
