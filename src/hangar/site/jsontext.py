"""``json.dumps(value, indent=1, ensure_ascii=False)``, the text of a docs tool's result, at the C encoder's speed.

With ``indent`` set, the standard library encodes in pure Python (the C encoder knows no indentation): for a
search's five results that cost as much as the search. Here an object or array holding only scalars is encoded by
the C encoder with the line break and indentation written into its separators, which gives the same text; only
the nesting above those is walked in Python. Anything but plain JSON types (a subclass, a key that is not a
string) is left to ``json.dumps`` itself, so the text is always the standard library's.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import lru_cache
from typing import Any

_SCALARS = frozenset({str, int, float, bool, type(None)})
_scalar = json.JSONEncoder(ensure_ascii=False).encode


@lru_cache(maxsize=32)
def _flat(depth: int) -> Callable[[Any], str]:
    """The C encoder writing a container of scalars at ``depth``: line break and indentation in its separators."""
    return json.JSONEncoder(ensure_ascii=False, separators=(",\n" + " " * (depth + 1), ": ")).encode


class _Unusual(Exception):
    """A value the fast path does not write exactly as ``json.dumps`` would."""


def dumps(value: Any) -> str:
    try:
        return _write(value, 0)
    except _Unusual:
        return json.dumps(value, indent=1, ensure_ascii=False)


def _write(value: Any, depth: int) -> str:
    kind = type(value)
    if kind in _SCALARS:
        return _scalar(value)
    if kind is dict:
        if not value:
            return "{}"
        pad = "\n" + " " * (depth + 1)
        if any(type(k) is not str for k in value):
            raise _Unusual
        if all(type(v) in _SCALARS for v in value.values()):
            flat = _flat(depth)(value)
            return "{" + pad + flat[1:-1] + "\n" + " " * depth + "}"
        items = (_scalar(k) + ": " + _write(v, depth + 1) for k, v in value.items())
        return "{" + pad + ("," + pad).join(items) + "\n" + " " * depth + "}"
    if kind is list:
        if not value:
            return "[]"
        pad = "\n" + " " * (depth + 1)
        if all(type(v) in _SCALARS for v in value):
            flat = _flat(depth)(value)
            return "[" + pad + flat[1:-1] + "\n" + " " * depth + "]"
        return "[" + pad + ("," + pad).join(_write(v, depth + 1) for v in value) + "\n" + " " * depth + "]"
    raise _Unusual
