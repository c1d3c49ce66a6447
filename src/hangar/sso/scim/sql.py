"""Translating a bound SCIM filter into one SQL condition over ``scim_users`` joined with ``users``.

Listing never loads users into Python to filter them. The common attributes are columns (``id``, ``userName``
through its case-folded unique index, ``externalId``, ``active`` from ``users.deactivated_at``,
``meta.created``/``meta.lastModified``); every other attribute is looked up in the value index
(``scim.index``): "some value of the attribute satisfies the predicate" is ``seq IN (SELECT user_seq FROM
scim_values WHERE path = ... AND ...)``, which SQLite answers from a covering index and evaluates once. Records
are keyed there by ``seq``, a small integer, rather than the 36-character user id: the subqueries of a filter
matching thousands of users compare and carry integers. A value filter (``emails[type eq "work" and value co
"@x"]``) joins one index row per condition on (user, element), or groups the index rows of the attribute by
element and keeps the elements whose rows satisfy the whole inner filter together.

``to_sql(bound, correlated=True)`` gives the same condition as ``EXISTS`` probes per user instead of lists:
SQLite builds an ``IN (subquery)`` list whole before it returns a row, so a page read by walking the listing
order and stopping after ``count`` matches needs probes to stop early.

The semantics are those of ``match`` (the in-memory evaluator), which the unit tests check against this on
generated data: ASCII case folding, empty strings count as absent, ``ne`` is ``not eq``, ``eq null`` is
"absent", and no condition is ever NULL, so that ``not`` means what it says.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.sql.elements import ColumnElement

from hangar.core.portable_sql import contains, ends_with, starts_with, unindexed
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
        return contains(column, value)
    if op == "sw":
        return starts_with(column, value)
    if op == "ew":
        return ends_with(column, value)
    return _order(op, column, value)


# -- attributes kept in columns -----------------------------------------------------------------------------


def _some(outer: ColumnElement[Any], inner: ColumnElement[Any], query: sa.Select[Any], correlated: bool) -> Cond:
    """``outer IN (query)``, where ``query`` selects ``inner`` (never NULL); or, ``correlated``, an EXISTS probe
    of ``query`` for each outer row (see the module docstring)."""
    if correlated:
        # Only scim_users is the outer row: a page query also joins ``users``, which the probe of ``active``
        # reads on its own.
        return sa.exists(query.where(inner == outer).correlate(scim_users))
    return outer.in_(query)


def _column_leaf(bound: BCompare | BPresent, column: ColumnElement[Any], folded: bool = False) -> Cond:
    """``folded``: the column already holds the case-folded value (``user_name_lc``), so comparing it needs no
    ``lower()`` and its index serves."""
    leaf = bound.target.leaf
    present: Cond = column.is_not(None)
    if leaf.type in TEXT_TYPES and leaf.type != "dateTime":
        present = sa.and_(present, column != "")
    if isinstance(bound, BPresent):
        return present
    if bound.value is None:
        return sa.not_(present) if bound.op == "eq" else present
    if bound.op == "ne":
        return sa.not_(_column_leaf(BCompare(bound.target, "eq", bound.value), column, folded))
    value = bound.value
    if isinstance(value, datetime):
        return sa.and_(present, _order(bound.op, column, value))
    if leaf.case_exact:
        return sa.and_(present, _text_compare(bound.op, column, str(value)))
    return sa.and_(present, _text_compare(bound.op, column if folded else sa.func.lower(column), fold(str(value))))


def _active(bound: BCompare | BPresent) -> Cond:
    # A probe of the user's row, evaluated only for the records the rest of the filter leaves (as a list it
    # would read every active user's id first).
    live = sa.select(users.c.id).where(users.c.deactivated_at.is_(None))
    active = _some(scim_users.c.user_id, users.c.id, live, correlated=True)
    if isinstance(bound, BPresent):
        return sa.true()
    if bound.value is None:
        return sa.true() if bound.op == "ne" else sa.false()
    same = active if bound.value else sa.not_(active)
    return same if bound.op == "eq" else sa.not_(same)


# -- attributes in the value index ------------------------------------------------------------------------


def _value_predicate(values: Any, leaf: AttrDef, op: str, value: Any, probe: bool = False) -> Cond:
    """The predicate one index row must satisfy for ``<leaf> <op> <value>`` (value not None, op not ne).

    ``probe``: the row is reached through its user (a correlated probe), so the values are kept out of index
    choice: without statistics SQLite would rather range over every user's values than look up one user's."""
    num, text, text_lc = values.c.num, values.c.text, values.c.text_lc
    if probe:
        num, text, text_lc = unindexed(num), unindexed(text), unindexed(text_lc)
    if leaf.type == "boolean":
        same: Cond = num == (1.0 if value else 0.0)
        return same
    if leaf.type in ("integer", "decimal"):
        return sa.and_(num.is_not(None), _order(op, num, float(value)))
    if isinstance(value, datetime):
        raise FilterSemanticError(f"{leaf.name} cannot be compared as a timestamp here")
    if leaf.case_exact:
        return sa.and_(text.is_not(None), _text_compare(op, text, str(value)))
    return sa.and_(text_lc.is_not(None), _text_compare(op, text_lc, fold(str(value))))


def _holders(query: sa.Select[Any], key: ColumnElement[Any], correlated: bool) -> Cond:
    """Users among those ``query`` selects by ``key`` (a ``scim_values.user_seq``)."""
    return _some(scim_users.c.seq, key, query, correlated)


def _having_users(values: Any, path: str, where: Cond, correlated: bool) -> Cond:
    """Users with at least one index row at ``path`` satisfying ``where``."""
    return _holders(sa.select(values.c.user_seq).where(values.c.path == path, where), values.c.user_seq, correlated)


def _indexed_leaf(bound: BCompare | BPresent, correlated: bool) -> Cond:
    target = bound.target
    path = leaf_key(target)
    values = scim_values.alias()
    if isinstance(bound, BPresent) or bound.value is None:
        present = _having_users(values, path, sa.true(), correlated)
        return sa.not_(present) if isinstance(bound, BCompare) and bound.op == "eq" else present
    if bound.op == "ne":
        equal = _value_predicate(values, target.leaf, "eq", bound.value, correlated)
        return sa.not_(_having_users(values, path, equal, correlated))
    where = _value_predicate(values, target.leaf, bound.op, bound.value, correlated)
    return _having_users(values, path, where, correlated)


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


def _joined_elements(conjuncts: list[Bound], correlated: bool) -> Cond:
    """``attr[a and b and ...]`` of positive conditions: one index row per condition, all in one element,
    found by joining the rows on (user, element) instead of grouping every element."""
    # The likeliest-selective condition first: SQLite, without statistics, drives the join from it.
    conjuncts = sorted(conjuncts, key=_selectivity)
    if not correlated and len(conjuncts) > 1 and _selectivity(conjuncts[0])[0] > 0:
        return _merged_elements(conjuncts)
    rows = [scim_values.alias() for _ in conjuncts]
    first = rows[0]
    query = sa.select(first.c.user_seq).select_from(first)
    for row in rows[1:]:
        query = query.join(row, sa.and_(row.c.user_seq == first.c.user_seq, row.c.elem == first.c.elem))
    conditions: list[Cond] = []
    for row, cond in zip(rows, conjuncts, strict=True):
        assert isinstance(cond, BCompare | BPresent)
        conditions.append(row.c.path == leaf_key(cond.target))
        if isinstance(cond, BCompare):
            conditions.append(_value_predicate(row, cond.target.leaf, cond.op, cond.value, correlated))
    return _holders(query.where(*conditions), first.c.user_seq, correlated)


def _merged_elements(conjuncts: list[Bound]) -> Cond:
    """``attr[a and b and ...]`` where no condition is on an identifying sub-attribute (``emails[type eq "work"
    and primary eq true]``): each condition may hold for most elements, so probing one element per row of the
    first would cost a lookup per element. Instead each condition lists its (user, element) pairs, which an
    equality reads from a covering index already in that order, and SQLite merges the sorted lists (an
    ``INTERSECT`` with ``ORDER BY`` runs as a merge)."""
    sides = []
    for cond in conjuncts:
        assert isinstance(cond, BCompare | BPresent)
        row = scim_values.alias()
        where = [row.c.path == leaf_key(cond.target)]
        if isinstance(cond, BCompare):
            where.append(_value_predicate(row, cond.target.leaf, cond.op, cond.value))
        sides.append(sa.select(row.c.user_seq, row.c.elem).where(*where))
    pairs = sa.intersect(*sides).order_by(sa.literal_column("user_seq"), sa.literal_column("elem")).subquery()
    return _holders(sa.select(pairs.c.user_seq), pairs.c.user_seq, correlated=False)


def _value_path(bound: BValuePath, correlated: bool) -> Cond:
    if _column(bound.target) is not None or bound.target.attr.name in ("userName", "active"):
        raise FilterSemanticError(f"{bound.target.attr.name}[...] cannot be used in a filter")
    inner = bound.inner
    if isinstance(inner, BPresent) or (isinstance(inner, BCompare) and inner.op != "ne" and inner.value is not None):
        # One positive condition needs no grouping: some element satisfies it exactly when some value does.
        return _indexed_leaf(inner, correlated)
    conjuncts = _conjuncts(inner)
    if all(_positive(c) for c in conjuncts):
        return _joined_elements(conjuncts, correlated)
    values = scim_values.alias()
    element_path = leaf_key(Target(bound.target.ext, bound.target.attr, None))
    is_element = sa.func.max(sa.case((values.c.path == element_path, 1), else_=0)) == 1
    grouped = (
        sa.select(values.c.user_seq)
        .where(values.c.path.in_(sorted({element_path} | _paths(bound.inner))))
        .group_by(values.c.user_seq, values.c.elem)
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
            values.c.user_seq.in_(sa.select(narrow.c.user_seq).where(narrow.c.path == leaf_key(best.target), where))
        )
    return _holders(grouped, values.c.user_seq, correlated)


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


def _groups(bound: Bound, correlated: bool) -> Cond:
    def members_where(cond: Cond) -> Cond:
        rows = sa.select(memberships.c.user_id).join(workspaces, workspaces.c.id == memberships.c.workspace_id)
        return _some(scim_users.c.user_id, memberships.c.user_id, rows.where(cond), correlated)

    if isinstance(bound, BValuePath):
        return members_where(_group_element(bound.inner))
    assert isinstance(bound, BCompare | BPresent)
    if isinstance(bound, BPresent) and bound.target.sub is None:
        return members_where(sa.true())
    column = _group_column(bound.target)
    present = BPresent(bound.target)
    if isinstance(bound, BPresent) or bound.value is None:
        some = members_where(_column_leaf(present, column))
        return sa.not_(some) if isinstance(bound, BCompare) and bound.op == "eq" else some
    if bound.op == "ne":
        return sa.not_(members_where(_column_leaf(BCompare(bound.target, "eq", bound.value), column)))
    return members_where(_column_leaf(bound, column))


def to_sql(bound: Bound, correlated: bool = False) -> Cond:
    """The SQL condition selecting the users ``bound`` matches; ``correlated``: as probes (module docstring)."""
    if isinstance(bound, BAnd):
        return sa.and_(to_sql(bound.left, correlated), to_sql(bound.right, correlated))
    if isinstance(bound, BOr):
        return sa.or_(to_sql(bound.left, correlated), to_sql(bound.right, correlated))
    if isinstance(bound, BNot):
        return sa.not_(to_sql(bound.inner, correlated))
    if _is_groups(bound.target):
        return _groups(bound, correlated)
    if isinstance(bound, BValuePath):
        return _value_path(bound, correlated)
    target = bound.target
    if target.ext is None and target.attr.name == "active":
        return _active(bound)
    if target.ext is None and target.attr.name == "userName":
        # Live records keep ``user_name_lc`` equal to the folded userName (deleted ones, never listed, hold NULL):
        # every comparison runs on it, through its unique index or the listing index that covers it.
        return _column_leaf(bound, scim_users.c.user_name_lc, folded=True)
    column = _column(target)
    if column is not None:
        return _column_leaf(bound, column)
    return _indexed_leaf(bound, correlated)
