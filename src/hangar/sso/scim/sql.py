"""Translating a bound SCIM filter into one SQL condition over ``scim_users`` joined with ``users``.

Listing never loads users into Python to filter them: the condition runs in SQLite. Columns serve the common
attributes (``id``, ``userName`` through its case-folded unique index, ``externalId``, ``active`` from
``users.deactivated_at``, ``meta.created``/``meta.lastModified``); everything else is read from the stored
representation with ``json_extract``, and multi-valued attributes with an ``EXISTS`` over ``json_each`` (one
element for every condition of a value filter, as ``emails[type eq "work" and value co "@x"]`` requires).

The semantics are those of ``match`` (the in-memory evaluator), which the unit tests check against this on the
same data: ASCII case folding, empty strings count as absent, ``ne`` is ``not eq``, and every condition is
built never to be NULL so that ``not`` means what it says.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from itertools import count
from typing import Any

import sqlalchemy as sa
from sqlalchemy.sql.elements import ColumnElement

from hangar.identity import tables as identity_tables
from hangar.sso.scim.match import (
    BAnd,
    BCompare,
    BNot,
    BOr,
    Bound,
    BPresent,
    BValuePath,
    FilterSemanticError,
    Target,
    fold,
)
from hangar.sso.scim.tables import scim_users

users = identity_tables.users
Cond = ColumnElement[bool]
Leaf = Callable[[Target], ColumnElement[Any]]


def _json_path(*keys: str) -> str:
    return "$" + "".join(f'."{k}"' for k in keys)


def _column(target: Target) -> ColumnElement[Any] | None:
    """A column for the attributes kept in columns; None for the ones read from JSON."""
    name = target.attr.name
    if target.ext is not None:
        return None
    if name == "id":
        return users.c.id
    if name == "userName":
        return scim_users.c.user_name
    if name == "externalId":
        return scim_users.c.external_id
    if name == "meta" and target.sub is not None:
        sub = target.sub.name
        if sub == "created":
            return scim_users.c.created_at
        if sub == "lastModified":
            return scim_users.c.updated_at
        if sub == "resourceType":
            return sa.literal("User")
        raise FilterSemanticError(f"meta.{sub} cannot be used in a filter")
    return None


def _json_keys(target: Target) -> list[str]:
    keys = [] if target.ext is None or target.attr.name == target.ext else [target.ext]
    return [*keys, target.attr.name]


class _Translator:
    def __init__(self) -> None:
        self._aliases = count()

    def cond(self, bound: Bound, element: Leaf | None = None) -> Cond:
        if isinstance(bound, BAnd):
            return sa.and_(self.cond(bound.left, element), self.cond(bound.right, element))
        if isinstance(bound, BOr):
            return sa.or_(self.cond(bound.left, element), self.cond(bound.right, element))
        if isinstance(bound, BNot):
            return sa.not_(self.cond(bound.inner, element))
        if isinstance(bound, BValuePath):
            return self._exists(bound.target, lambda el: self.cond(bound.inner, el))
        if element is not None:
            return self._leaf(bound, element(bound.target))
        target = bound.target
        if target.attr.name == "active" and target.ext is None:
            return self._active(bound)
        if (
            target.attr.name == "userName"
            and target.ext is None
            and isinstance(bound, BCompare)
            and bound.op in ("eq", "ne")
            and isinstance(bound.value, str)
        ):
            # The case-folded copy has a unique index: the lookup identity providers make most.
            folded = scim_users.c.user_name_lc
            same = sa.and_(folded.is_not(None), folded == fold(bound.value))
            return same if bound.op == "eq" else sa.not_(same)
        column = _column(target)
        if column is not None:
            return self._leaf(bound, column)
        if target.attr.multi:
            return self._multi(bound)
        keys = _json_keys(target)
        if target.sub is not None:
            keys.append(target.sub.name)
        return self._leaf(bound, sa.func.json_extract(scim_users.c.resource, _json_path(*keys)))

    def _active(self, bound: BCompare | BPresent) -> Cond:
        active = users.c.deactivated_at.is_(None)
        if isinstance(bound, BPresent):
            return sa.true()
        if bound.value is None:
            return sa.true() if bound.op == "ne" else sa.false()
        same = active if bound.value else sa.not_(active)
        return same if bound.op == "eq" else sa.not_(same)

    def _multi(self, bound: BCompare | BPresent) -> Cond:
        target = bound.target
        if target.sub is None and isinstance(bound, BPresent):
            path = _json_path(*_json_keys(target))
            return sa.func.coalesce(sa.func.json_array_length(scim_users.c.resource, path), 0) > 0
        # Some element matches; ``ne`` and ``eq null`` mean that none does.
        if isinstance(bound, BPresent) or bound.value is None:
            some = self._exists(target, lambda el: self._leaf(BPresent(target), el(target)))
            return sa.not_(some) if isinstance(bound, BCompare) and bound.op == "eq" else some
        if bound.op == "ne":
            equal = BCompare(target, "eq", bound.value)
            return sa.not_(self._exists(target, lambda el: self._leaf(equal, el(target))))
        return self._exists(target, lambda el: self._leaf(bound, el(target)))

    def _exists(self, target: Target, where: Callable[[Leaf], Cond]) -> Cond:
        path = _json_path(*_json_keys(target))
        each = sa.func.json_each(scim_users.c.resource, path).table_valued("value").alias(f"el{next(self._aliases)}")

        def element(t: Target) -> ColumnElement[Any]:
            if t.sub is None:
                return each.c.value
            return sa.func.json_extract(each.c.value, _json_path(t.sub.name))

        return sa.exists(sa.select(sa.literal(1)).select_from(each).where(where(element)))

    def _leaf(self, bound: Bound, expr: ColumnElement[Any]) -> Cond:
        assert isinstance(bound, BCompare | BPresent)
        leaf = bound.target.leaf
        is_text = leaf.type not in ("boolean", "integer", "decimal", "dateTime", "complex")
        present: Cond = expr.is_not(None)
        if is_text:
            present = sa.and_(present, expr != "")
        if leaf.type == "complex":
            present = sa.and_(present, expr != "{}")
        if isinstance(bound, BPresent):
            return present
        if bound.value is None:
            return sa.not_(present) if bound.op == "eq" else present
        if bound.op == "ne":
            return sa.not_(self._leaf(BCompare(bound.target, "eq", bound.value), expr))
        return sa.and_(present, self._compare(leaf.type, leaf.case_exact, bound.op, expr, bound.value))

    def _compare(self, kind: str, case_exact: bool, op: str, expr: ColumnElement[Any], value: Any) -> Cond:
        if kind == "boolean":
            return expr == (1 if value else 0)
        if kind in ("integer", "decimal"):
            typed = sa.and_(sa.func.typeof(expr).in_(("integer", "real")), _order(op, expr, value))
            return typed
        if isinstance(value, datetime):
            return _order(op, expr, value)
        text = str(value)
        left = expr if case_exact else sa.func.lower(expr)
        right = text if case_exact else fold(text)
        if op in ("co", "sw", "ew") and right == "":
            return sa.true()
        if op == "co":
            return sa.func.instr(left, right) > 0
        if op == "sw":
            return sa.func.substr(left, 1, len(right)) == right
        if op == "ew":
            return sa.func.substr(left, -len(right)) == right
        return _order(op, left, right)


def _order(op: str, left: ColumnElement[Any], right: Any) -> Cond:
    result: Cond
    if op == "eq":
        result = left == right
    elif op == "gt":
        result = left > right
    elif op == "ge":
        result = left >= right
    elif op == "lt":
        result = left < right
    elif op == "le":
        result = left <= right
    else:
        raise FilterSemanticError(f"{op} does not apply here")
    return result


def to_sql(bound: Bound) -> Cond:
    """The SQL condition selecting the users ``bound`` matches."""
    return _Translator().cond(bound)
