"""Reducers: how a write to an ``outputKey`` merges with the value already there (CONTRACTS §5: every write,
not only parallel ones). A value of the wrong shape is a ``ReducerError`` naming the reducer and the key."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hangar.pipelines.model import Reducer
from hangar.pipelines.substitute import ABSENT


class ReducerError(ValueError):
    pass


def _number(value: Any, what: str, reducer: str, key: str) -> int | float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ReducerError(f"reducer {reducer} on {key!r}: the {what} value {value!r} is not a number")
    return value


def reduce_value(reducer: Reducer, key: str, existing: Any, new: Any) -> Any:
    """The merged value; ``existing`` is ``ABSENT`` when the key is not in state yet."""
    if reducer == "override":
        return new
    if reducer == "append":
        if existing is ABSENT or existing is None:
            return [new]
        if not isinstance(existing, list):
            raise ReducerError(f"reducer append on {key!r}: the value already there is not a list")
        return [*existing, new]
    if reducer == "mergeLists":
        if not isinstance(new, list):
            raise ReducerError(f"reducer mergeLists on {key!r}: the new value is not a list")
        if existing is ABSENT or existing is None:
            return list(new)
        if not isinstance(existing, list):
            raise ReducerError(f"reducer mergeLists on {key!r}: the value already there is not a list")
        return [*existing, *new]
    if reducer == "mergeMaps":
        if not isinstance(new, Mapping):
            raise ReducerError(f"reducer mergeMaps on {key!r}: the new value is not a map")
        if existing is ABSENT or existing is None:
            return dict(new)
        if not isinstance(existing, Mapping):
            raise ReducerError(f"reducer mergeMaps on {key!r}: the value already there is not a map")
        return {**existing, **new}
    if reducer == "sum":
        total = _number(new, "new", reducer, key)
        if existing is ABSENT or existing is None:
            return total
        return _number(existing, "existing", reducer, key) + total
    raise ReducerError(f"unknown reducer {reducer!r}")
