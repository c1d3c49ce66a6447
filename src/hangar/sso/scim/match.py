"""Binding a parsed filter to a resource schema, and evaluating it in memory.

Binding resolves every attribute path (case-insensitively) to its definition, checks that the operator suits the
attribute's type and coerces the literal (``"true"`` for a boolean, an ISO timestamp for a ``dateTime``), so
that both evaluators (this one, used for PATCH value filters, and ``sql``, used for listing) see the same typed
tree and agree on meaning:

- string comparisons fold ASCII case unless the attribute is ``caseExact`` (SQLite's ``lower`` folds ASCII only,
  and the two evaluators must agree);
- a multi-valued attribute matches when any of its values does; a complex multi-valued attribute named without
  a sub-attribute compares its ``value`` sub-attribute;
- ``ne`` is ``not eq`` (an absent attribute is "not equal"); ``eq null`` means absent and ``ne null`` present;
- ``gt``/``ge``/``lt``/``le`` compare strings, numbers and timestamps; never booleans or binaries.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from hangar.sso.scim.filter import And, AttrPath, Compare, Filter, Not, Or, Present
from hangar.sso.scim.schema import AttrDef, ResourceSchema

_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
STRING_TYPES = frozenset({"string", "reference", "binary", "dateTime"})
ORDER_OPS = frozenset({"gt", "ge", "lt", "le"})
SUBSTRING_OPS = frozenset({"co", "sw", "ew"})


class FilterSemanticError(ValueError):
    """A filter that parses but cannot apply (unknown attribute, operator unfit for the type...)."""


def fold(text: str) -> str:
    return text.translate(_ASCII_LOWER)


def parse_datetime(text: str) -> datetime:
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise FilterSemanticError(f"{text!r} is not an ISO 8601 timestamp") from None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


@dataclass(frozen=True)
class Target:
    """Where a bound expression reads: an attribute of the resource (or of an extension), maybe a sub-attribute."""

    ext: str | None
    attr: AttrDef
    sub: AttrDef | None

    @property
    def leaf(self) -> AttrDef:
        return self.sub or self.attr


@dataclass(frozen=True)
class BCompare:
    target: Target
    op: str
    value: Any


@dataclass(frozen=True)
class BPresent:
    target: Target


@dataclass(frozen=True)
class BAnd:
    left: Bound
    right: Bound


@dataclass(frozen=True)
class BOr:
    left: Bound
    right: Bound


@dataclass(frozen=True)
class BNot:
    inner: Bound


@dataclass(frozen=True)
class BValuePath:
    """``attr[inner]``: ``inner``'s targets are sub-attributes of ``target.attr``, read per element."""

    target: Target
    inner: Bound


Bound = BCompare | BPresent | BAnd | BOr | BNot | BValuePath


def resolve(schema: ResourceSchema, path: AttrPath) -> Target:
    found = schema.find(path.uri, path.attr)
    if found is None:
        raise FilterSemanticError(f"{path} is not an attribute of this resource")
    ext, attr = found
    if path.sub is None:
        return Target(ext, attr, None)
    if not attr.complex:
        raise FilterSemanticError(f"{path}: {attr.name} has no sub-attributes")
    sub = attr.sub(path.sub)
    if sub is None:
        raise FilterSemanticError(f"{path}: {attr.name} has no sub-attribute {path.sub!r}")
    return Target(ext, attr, sub)


def _element_target(parent: Target, path: AttrPath) -> Target:
    if path.uri is not None or path.sub is not None:
        raise FilterSemanticError(f"inside {parent.attr.name}[...] name a sub-attribute of it, not {path}")
    sub = parent.attr.sub(path.attr)
    if sub is None:
        raise FilterSemanticError(f"{parent.attr.name} has no sub-attribute {path.attr!r}")
    return Target(parent.ext, parent.attr, sub)


def _implicit_value(target: Target, op: str) -> Target:
    """A complex attribute compared without a sub-attribute compares its ``value``."""
    if target.sub is None and target.attr.complex:
        value = target.attr.sub("value")
        if value is None or not target.attr.multi:
            raise FilterSemanticError(f"{target.attr.name} is complex; name one of its sub-attributes to use {op}")
        return Target(target.ext, target.attr, value)
    return target


def _coerce(target: Target, op: str, value: Any) -> Any:
    leaf = target.leaf
    name = leaf.name
    if value is None:
        if op not in ("eq", "ne"):
            raise FilterSemanticError(f"null can only be compared with eq or ne ({name} {op} null)")
        return None
    if leaf.type == "boolean":
        if op not in ("eq", "ne"):
            raise FilterSemanticError(f"{name} is a boolean: use eq or ne, not {op}")
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        if not isinstance(value, bool):
            raise FilterSemanticError(f"{name} is a boolean; compare it with true or false")
        return value
    if leaf.type in ("integer", "decimal"):
        if op in SUBSTRING_OPS:
            raise FilterSemanticError(f"{name} is a number: {op} applies to strings")
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise FilterSemanticError(f"{name} is a number; compare it with a number")
        return value
    if not isinstance(value, str):
        raise FilterSemanticError(f"{name} is a {leaf.type}; compare it with a string")
    if leaf.type == "binary" and op in ORDER_OPS:
        raise FilterSemanticError(f"{name} is binary: {op} does not apply")
    if leaf.type == "dateTime":
        if op in SUBSTRING_OPS:
            raise FilterSemanticError(f"{name} is a timestamp: compare it with eq, ne, gt, ge, lt or le")
        return parse_datetime(value)
    return value


def bind(schema: ResourceSchema, flt: Filter, parent: Target | None = None) -> Bound:
    """Resolve and type-check ``flt``; inside a value filter, ``parent`` is the complex attribute."""

    def target_of(path: AttrPath) -> Target:
        return _element_target(parent, path) if parent is not None else resolve(schema, path)

    if isinstance(flt, Compare):
        target = _implicit_value(target_of(flt.path), flt.op)
        return BCompare(target, flt.op, _coerce(target, flt.op, flt.value))
    if isinstance(flt, Present):
        return BPresent(target_of(flt.path))
    if isinstance(flt, And):
        return BAnd(bind(schema, flt.left, parent), bind(schema, flt.right, parent))
    if isinstance(flt, Or):
        return BOr(bind(schema, flt.left, parent), bind(schema, flt.right, parent))
    if isinstance(flt, Not):
        return BNot(bind(schema, flt.inner, parent))
    outer = resolve(schema, flt.path)
    if not outer.attr.complex:
        raise FilterSemanticError(f"{flt.path}[...] needs a complex attribute")
    return BValuePath(outer, bind(schema, flt.filter, outer))


# --- in-memory evaluation ------------------------------------------------------------------------------------


def get_ci(obj: Any, name: str) -> Any:
    """``obj[name]`` with the key compared case-insensitively; None when absent or not a mapping."""
    if not isinstance(obj, dict):
        return None
    if name in obj:
        return obj[name]
    low = name.lower()
    for key, value in obj.items():
        if key.lower() == low:
            return value
    return None


def _present(value: Any) -> bool:
    return value is not None and value != "" and value != [] and value != {}


def values_at(target: Target, resource: dict[str, Any], element: dict[str, Any] | None = None) -> list[Any]:
    """Every value ``target`` names in ``resource`` (or in one element of a multi-valued attribute)."""
    if element is not None:
        found = get_ci(element, target.leaf.name)
        items = found if isinstance(found, list) else [found]
        return [v for v in items if _present(v)]
    container = resource if target.ext is None else get_ci(resource, target.ext)
    value = get_ci(container, target.attr.name)
    items = value if isinstance(value, list) else [value]
    if target.sub is not None:
        items = [get_ci(item, target.sub.name) for item in items]
    return [v for v in items if _present(v)]


def _cmp_one(leaf: AttrDef, op: str, have: Any, want: Any) -> bool:
    if leaf.type == "boolean":
        return isinstance(have, bool) and (have == want) == (op == "eq")
    if leaf.type in ("integer", "decimal"):
        if isinstance(have, bool) or not isinstance(have, int | float):
            return False
        return _order(op, have, want)
    if not isinstance(have, str):
        return False
    if isinstance(want, datetime):
        try:
            return _order(op, parse_datetime(have), want)
        except FilterSemanticError:
            return False
    a, b = (have, want) if leaf.case_exact else (fold(have), fold(want))
    if op == "co":
        return b in a
    if op == "sw":
        return a.startswith(b)
    if op == "ew":
        return a.endswith(b)
    return _order(op, a, b)


def _order(op: str, a: Any, b: Any) -> bool:
    if op in ("eq", "ne"):
        return bool(a == b)
    if op == "gt":
        return bool(a > b)
    if op == "ge":
        return bool(a >= b)
    if op == "lt":
        return bool(a < b)
    return bool(a <= b)


def matches(bound: Bound, resource: dict[str, Any], element: dict[str, Any] | None = None) -> bool:
    """Whether ``resource`` (or one element of a multi-valued attribute, inside a value filter) matches."""
    if isinstance(bound, BAnd):
        return matches(bound.left, resource, element) and matches(bound.right, resource, element)
    if isinstance(bound, BOr):
        return matches(bound.left, resource, element) or matches(bound.right, resource, element)
    if isinstance(bound, BNot):
        return not matches(bound.inner, resource, element)
    if isinstance(bound, BPresent):
        return bool(values_at(bound.target, resource, element))
    if isinstance(bound, BValuePath):
        return any(matches(bound.inner, resource, el) for el in elements_of(bound.target, resource))
    values = values_at(bound.target, resource, element)
    if bound.value is None:
        return (not values) if bound.op == "eq" else bool(values)
    if bound.op == "ne":
        return not any(_cmp_one(bound.target.leaf, "eq", v, bound.value) for v in values)
    return any(_cmp_one(bound.target.leaf, bound.op, v, bound.value) for v in values)


def elements_of(target: Target, resource: dict[str, Any]) -> list[dict[str, Any]]:
    """The elements of a complex attribute (a single complex value counts as one element)."""
    container = resource if target.ext is None else get_ci(resource, target.ext)
    value = get_ci(container, target.attr.name)
    items = value if isinstance(value, list) else [value]
    return [item for item in items if isinstance(item, dict)]
