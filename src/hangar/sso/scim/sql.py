"""Translating a bound SCIM filter into one SQL condition over ``scim_users`` joined with ``users``.

Listing never loads users into Python to filter them. The common attributes are columns (``id``, ``userName``
through its case-folded unique index, ``externalId``, ``active`` from ``users.deactivated_at``,
``meta.created``/``meta.lastModified``); every other attribute is looked up in the value index
(``scim.index``): "some value of the attribute satisfies the predicate" is ``user_id IN (SELECT user_id FROM
scim_values WHERE path = ... AND ...)``, which SQLite answers from an index and evaluates once. A value filter
(``emails[type eq "work" and value co "@x"]``) groups the index rows of the attribute by element and keeps the
elements whose rows satisfy the whole inner filter together.

The semantics are those of ``match`` (the in-memory evaluator), which the unit tests check against this on
generated data: ASCII case folding, empty strings count as absent, ``ne`` is ``not eq``, ``eq null`` is
"absent", and no condition is ever NULL, so that ``not`` means what it says.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.sql.elements import ColumnElement

from hangar.identity import tables as identity_tables
from hangar.sso.scim.index import leaf_key
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
from hangar.sso.scim.schema import AttrDef
from hangar.sso.scim.tables import scim_users, scim_values

users = identity_tables.users
memberships = identity_tables.memberships
workspaces = identity_tables.workspaces
Cond = ColumnElement[bool]
TEXT_TYPES = frozenset({"string", "reference", "binary", "dateTime"})
_TOP = "\U0010ffff"


def _column(target: Target) -> ColumnElement[Any] | None:
    """The column holding an attribute kept in columns, or None for the ones in the value index."""
    if target.ext is not None:
        return None
    name = target.attr.name
    if name == "id":
        return scim_users.c.user_id
    if name == "userName":
        return scim_users.c.user_name
    if name == "externalId":
        return scim_users.c.external_id
    if name == "meta":
        sub = target.sub.name if target.sub is not None else ""
        if sub == "created":
            return scim_users.c.created_at
        if sub == "lastModified":
            return scim_users.c.updated_at
        if sub == "resourceType":
            return sa.literal("User")
        raise FilterSemanticError(f"meta.{sub} cannot be used in a filter" if sub else "name a sub-attribute of meta")
    return None


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


def _text_compare(op: str, column: ColumnElement[Any], value: str) -> Cond:
    if op in ("co", "sw", "ew") and value == "":
        return sa.true()
    if op == "co":
        return sa.func.instr(column, value) > 0
    if op == "sw":
        # The range lets SQLite walk the index; the substr keeps the meaning exact.
        return sa.and_(column >= value, column < value + _TOP, sa.func.substr(column, 1, len(value)) == value)
    if op == "ew":
        return sa.func.substr(column, -len(value)) == value
    return _order(op, column, value)


# -- attributes kept in columns -----------------------------------------------------------------------------


def _column_leaf(bound: BCompare | BPresent, column: ColumnElement[Any]) -> Cond:
    leaf = bound.target.leaf
    present: Cond = column.is_not(None)
    if leaf.type in TEXT_TYPES and leaf.type != "dateTime":
        present = sa.and_(present, column != "")
    if isinstance(bound, BPresent):
        return present
    if bound.value is None:
        return sa.not_(present) if bound.op == "eq" else present
    if bound.op == "ne":
        return sa.not_(_column_leaf(BCompare(bound.target, "eq", bound.value), column))
    value = bound.value
    if isinstance(value, datetime):
        return sa.and_(present, _order(bound.op, column, value))
    if leaf.case_exact:
        return sa.and_(present, _text_compare(bound.op, column, str(value)))
    return sa.and_(present, _text_compare(bound.op, sa.func.lower(column), fold(str(value))))


def _active(bound: BCompare | BPresent) -> Cond:
    # A subquery rather than a join, so that counting matches reads only scim_users' live index.
    active = scim_users.c.user_id.in_(sa.select(users.c.id).where(users.c.deactivated_at.is_(None)))
    if isinstance(bound, BPresent):
        return sa.true()
    if bound.value is None:
        return sa.true() if bound.op == "ne" else sa.false()
    same = active if bound.value else sa.not_(active)
    return same if bound.op == "eq" else sa.not_(same)


def _user_name(bound: BCompare) -> Cond | None:
    """``userName eq``/``ne`` through the unique case-folded index: the lookup identity providers make most."""
    if bound.op not in ("eq", "ne") or not isinstance(bound.value, str):
        return None
    folded = scim_users.c.user_name_lc
    same = sa.and_(folded.is_not(None), folded == fold(bound.value))
    return same if bound.op == "eq" else sa.not_(same)


# -- attributes in the value index ------------------------------------------------------------------------


def _value_predicate(values: Any, leaf: AttrDef, op: str, value: Any) -> Cond:
    """The predicate one index row must satisfy for ``<leaf> <op> <value>`` (value not None, op not ne)."""
    if leaf.type == "boolean":
        same: Cond = values.c.num == (1.0 if value else 0.0)
        return same
    if leaf.type in ("integer", "decimal"):
        return sa.and_(values.c.num.is_not(None), _order(op, values.c.num, float(value)))
    if isinstance(value, datetime):
        raise FilterSemanticError(f"{leaf.name} cannot be compared as a timestamp here")
    if leaf.case_exact:
        return sa.and_(values.c.text.is_not(None), _text_compare(op, values.c.text, str(value)))
    return sa.and_(values.c.text_lc.is_not(None), _text_compare(op, values.c.text_lc, fold(str(value))))


def _having_users(values: Any, path: str, where: Cond) -> Cond:
    """Users with at least one index row at ``path`` satisfying ``where``."""
    return scim_users.c.user_id.in_(sa.select(values.c.user_id).where(values.c.path == path, where))


def _indexed_leaf(bound: BCompare | BPresent) -> Cond:
    target = bound.target
    path = leaf_key(target)
    values = scim_values.alias()
    if isinstance(bound, BPresent) or bound.value is None:
        present = _having_users(values, path, sa.true())
        return sa.not_(present) if isinstance(bound, BCompare) and bound.op == "eq" else present
    if bound.op == "ne":
        equal = _value_predicate(values, target.leaf, "eq", bound.value)
        return sa.not_(_having_users(values, path, equal))
    return _having_users(values, path, _value_predicate(values, target.leaf, bound.op, bound.value))


def _element_condition(values: Any, bound: Bound) -> Cond:
    """A HAVING condition over one element's index rows (grouped by user and element)."""
    if isinstance(bound, BAnd):
        return sa.and_(_element_condition(values, bound.left), _element_condition(values, bound.right))
    if isinstance(bound, BOr):
        return sa.or_(_element_condition(values, bound.left), _element_condition(values, bound.right))
    if isinstance(bound, BNot):
        return sa.not_(_element_condition(values, bound.inner))
    assert isinstance(bound, BCompare | BPresent), "value filters do not nest"
    path = leaf_key(bound.target)

    def some(where: Cond) -> Cond:
        return sa.func.max(sa.case((sa.and_(values.c.path == path, where), 1), else_=0)) == 1

    if isinstance(bound, BPresent) or bound.value is None:
        present = some(sa.true())
        return sa.not_(present) if isinstance(bound, BCompare) and bound.op == "eq" else present
    if bound.op == "ne":
        return sa.not_(some(_value_predicate(values, bound.target.leaf, "eq", bound.value)))
    return some(_value_predicate(values, bound.target.leaf, bound.op, bound.value))


def _paths(bound: Bound) -> set[str]:
    if isinstance(bound, BAnd | BOr):
        return _paths(bound.left) | _paths(bound.right)
    if isinstance(bound, BNot):
        return _paths(bound.inner)
    if isinstance(bound, BValuePath):
        return _paths(bound.inner)
    return {leaf_key(bound.target)}


def _conjuncts(bound: Bound) -> list[Bound]:
    if isinstance(bound, BAnd):
        return _conjuncts(bound.left) + _conjuncts(bound.right)
    return [bound]


def _selectivity(bound: Bound) -> tuple[int, int]:
    """A guess at how few elements a positive condition leaves (lower is fewer): the identifying
    sub-attributes before the classifying ones, equality before prefixes before substrings."""
    if not isinstance(bound, BCompare | BPresent):
        return 9, 9
    sub = bound.target.sub.name if bound.target.sub is not None else ""
    by_sub = 0 if sub in ("value", "display", "formatted", "streetAddress", "postalCode") else 1
    by_op = {"eq": 0, "sw": 1, "ge": 2, "gt": 2, "le": 2, "lt": 2, "ew": 3, "co": 3}.get(
        bound.op if isinstance(bound, BCompare) else "", 4
    )
    return by_sub, by_op


def _positive(bound: Bound) -> bool:
    """A condition some value must satisfy (not a negation, ``ne`` or ``eq null``)."""
    return isinstance(bound, BPresent) or (isinstance(bound, BCompare) and bound.op != "ne" and bound.value is not None)


def _joined_elements(conjuncts: list[Bound]) -> Cond:
    """``attr[a and b and ...]`` of positive conditions: one index row per condition, all in one element,
    found by joining the rows on (user, element) instead of grouping every element."""
    # The likeliest-selective condition first: SQLite, without statistics, drives the join from it.
    conjuncts = sorted(conjuncts, key=_selectivity)
    rows = [scim_values.alias() for _ in conjuncts]
    first = rows[0]
    query = sa.select(first.c.user_id).select_from(first)
    for row in rows[1:]:
        query = query.join(row, sa.and_(row.c.user_id == first.c.user_id, row.c.elem == first.c.elem))
    conditions: list[Cond] = []
    for row, cond in zip(rows, conjuncts, strict=True):
        assert isinstance(cond, BCompare | BPresent)
        conditions.append(row.c.path == leaf_key(cond.target))
        if isinstance(cond, BCompare):
            conditions.append(_value_predicate(row, cond.target.leaf, cond.op, cond.value))
    return scim_users.c.user_id.in_(query.where(*conditions))


def _value_path(bound: BValuePath) -> Cond:
    if _column(bound.target) is not None or bound.target.attr.name in ("userName", "active"):
        raise FilterSemanticError(f"{bound.target.attr.name}[...] cannot be used in a filter")
    inner = bound.inner
    if isinstance(inner, BPresent) or (isinstance(inner, BCompare) and inner.op != "ne" and inner.value is not None):
        # One positive condition needs no grouping: some element satisfies it exactly when some value does.
        return _indexed_leaf(inner)
    conjuncts = _conjuncts(inner)
    if all(_positive(c) for c in conjuncts):
        return _joined_elements(conjuncts)
    values = scim_values.alias()
    element_path = leaf_key(Target(bound.target.ext, bound.target.attr, None))
    is_element = sa.func.max(sa.case((values.c.path == element_path, 1), else_=0)) == 1
    grouped = (
        sa.select(values.c.user_id)
        .where(values.c.path.in_(sorted({element_path} | _paths(bound.inner))))
        .group_by(values.c.user_id, values.c.elem)
        .having(sa.and_(is_element, _element_condition(values, bound.inner)))
    )
    # Grouping every element of an attribute is a scan; when the inner filter requires some value (a positive
    # condition in its top-level conjunction), only the users holding such a value need grouping.
    positive = [c for c in conjuncts if _positive(c)]
    if positive:
        best = min(positive, key=_selectivity)
        assert isinstance(best, BCompare | BPresent)
        narrow = scim_values.alias()
        where = (
            sa.true() if isinstance(best, BPresent) else _value_predicate(narrow, best.target.leaf, best.op, best.value)
        )
        grouped = grouped.where(
            values.c.user_id.in_(sa.select(narrow.c.user_id).where(narrow.c.path == leaf_key(best.target), where))
        )
    return scim_users.c.user_id.in_(grouped)


# -- groups: the workspaces a user is a member of (read-only, one membership row per element) ------------------


def _is_groups(target: Target) -> bool:
    return target.ext is None and target.attr.name == "groups"


def _group_column(target: Target) -> ColumnElement[Any]:
    sub = target.sub.name if target.sub is not None else "value"
    if sub == "value":
        return workspaces.c.id
    if sub == "display":
        return workspaces.c.name
    if sub == "type":
        return sa.literal("direct")
    raise FilterSemanticError(f"groups.{sub} cannot be used in a filter")


def _group_element(bound: Bound) -> Cond:
    """A condition on one membership row (joined with its workspace)."""
    if isinstance(bound, BAnd):
        return sa.and_(_group_element(bound.left), _group_element(bound.right))
    if isinstance(bound, BOr):
        return sa.or_(_group_element(bound.left), _group_element(bound.right))
    if isinstance(bound, BNot):
        return sa.not_(_group_element(bound.inner))
    assert isinstance(bound, BCompare | BPresent), "value filters do not nest"
    return _column_leaf(bound, _group_column(bound.target))


def _members_where(cond: Cond) -> Cond:
    rows = sa.select(memberships.c.user_id).join(workspaces, workspaces.c.id == memberships.c.workspace_id)
    return scim_users.c.user_id.in_(rows.where(cond))


def _groups(bound: Bound) -> Cond:
    if isinstance(bound, BValuePath):
        return _members_where(_group_element(bound.inner))
    assert isinstance(bound, BCompare | BPresent)
    if isinstance(bound, BPresent) and bound.target.sub is None:
        return _members_where(sa.true())
    column = _group_column(bound.target)
    present = BPresent(bound.target)
    if isinstance(bound, BPresent) or bound.value is None:
        some = _members_where(_column_leaf(present, column))
        return sa.not_(some) if isinstance(bound, BCompare) and bound.op == "eq" else some
    if bound.op == "ne":
        return sa.not_(_members_where(_column_leaf(BCompare(bound.target, "eq", bound.value), column)))
    return _members_where(_column_leaf(bound, column))


def columns_only(bound: Bound) -> bool:
    """Whether the filter reads only ``scim_users`` columns (no subquery), so running it twice costs little."""
    if isinstance(bound, BAnd | BOr):
        return columns_only(bound.left) and columns_only(bound.right)
    if isinstance(bound, BNot):
        return columns_only(bound.inner)
    if isinstance(bound, BValuePath):
        return False
    target = bound.target
    if target.ext is not None or target.attr.name in ("active", "groups"):
        return False
    try:
        return _column(target) is not None
    except FilterSemanticError:
        return True


def to_sql(bound: Bound) -> Cond:
    """The SQL condition selecting the users ``bound`` matches."""
    if isinstance(bound, BAnd):
        return sa.and_(to_sql(bound.left), to_sql(bound.right))
    if isinstance(bound, BOr):
        return sa.or_(to_sql(bound.left), to_sql(bound.right))
    if isinstance(bound, BNot):
        return sa.not_(to_sql(bound.inner))
    if _is_groups(bound.target):
        return _groups(bound)
    if isinstance(bound, BValuePath):
        return _value_path(bound)
    target = bound.target
    if target.ext is None and target.attr.name == "active":
        return _active(bound)
    if target.ext is None and target.attr.name == "userName" and isinstance(bound, BCompare):
        fast = _user_name(bound)
        if fast is not None:
            return fast
    column = _column(target)
    if column is not None:
        return _column_leaf(bound, column)
    return _indexed_leaf(bound)
