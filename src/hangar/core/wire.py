"""JSON from the outside, refused at the boundary when nothing behind it could store or answer it.

Every RPC frame (the auth frame too) and every JSON request body goes through ``loads``: a document that is
not JSON, nests deeper than ``MAX_DEPTH``, holds an integer outside the signed 64-bit range (or with more
than ``MAX_INT_DIGITS`` digits, before Python even converts it), or a string with a lone UTF-16 surrogate (which
no database or UTF-8 encoder accepts) is refused with ``InvalidArgs`` naming what was wrong, instead of failing
deep inside as ``internal``. ``require_text`` is the same refusal for one text field a store keeps (a name, a
title): empty or too long is ``InvalidArgs`` naming the field.
"""

from __future__ import annotations

import json
from typing import Any

from hangar.errors import InvalidArgs

MAX_DEPTH = 64
MAX_INT_DIGITS = 20
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


class OutOfRange:
    """An integer the document held that no 64-bit column takes: kept as a marker, so the rest of the document
    (a request id) can still be read, and refused by ``check``."""

    def __init__(self, text: str) -> None:
        self.digits = len(text.lstrip("-"))


def _parse_int(text: str) -> int | OutOfRange:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        return OutOfRange(text)  # before int(): converting thousands of digits is itself the attack
    value = int(text)
    return value if INT64_MIN <= value <= INT64_MAX else OutOfRange(text)


class NotANumber:
    """``NaN`` or ``Infinity``, which Python's parser accepts and JSON does not; refused by ``check``."""

    def __init__(self, name: str) -> None:
        self.name = name


def _parse_constant(name: str) -> NotANumber:
    return NotANumber(name)


# One decoder for every document (``json.loads`` with hooks builds a new one per call).
_DECODER = json.JSONDecoder(parse_int=_parse_int, parse_constant=_parse_constant)


def loads(data: str | bytes, *, field: str = "frame") -> Any:
    """Parse ``data`` as strict JSON (see the module docstring); ``InvalidArgs`` on ``field`` otherwise."""
    value = parse(data, field=field)
    check(value, field=field)
    return value


def parse(data: str | bytes, *, field: str = "frame") -> Any:
    """The JSON syntax and number checks of ``loads`` without the walk (``check``), for a caller that wants to
    read a request id out of a document it then refuses."""
    try:
        text = data.decode("utf-8") if isinstance(data, bytes | bytearray) else data
        if text.startswith("\ufeff"):  # as ``json.loads`` says it
            raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
        value = _DECODER.decode(text)
    except UnicodeDecodeError:
        raise InvalidArgs(f"{field} is not valid UTF-8", field=field) from None
    except RecursionError:
        raise InvalidArgs(f"{field} nests deeper than {MAX_DEPTH} levels", field=field) from None
    except ValueError as exc:
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        raise InvalidArgs(f"{field} is not valid JSON ({reason})", field=field) from None
    return value


def check(value: Any, *, field: str = "frame") -> None:
    """Depth, integer range and string well-formedness of an already parsed document (iteratively: the check
    itself must not recurse on hostile input)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        kind = type(item)  # the parser's own types first, by identity: a frame's walk is on every request
        if kind is str:
            _check_text(item, field)
        elif kind is int:
            if not INT64_MIN <= item <= INT64_MAX:
                raise InvalidArgs(f"{field}: an integer is out of range (64-bit integers only)", field=field)
        elif kind is dict or kind is list:
            if depth > MAX_DEPTH:
                raise InvalidArgs(f"{field} nests deeper than {MAX_DEPTH} levels", field=field)
            if kind is dict:
                for key, sub in item.items():
                    _check_text(key, field)
                    stack.append((sub, depth + 1))
            else:
                stack.extend((sub, depth + 1) for sub in item)
        elif item is None or kind is bool or kind is float:
            continue
        else:
            _check_other(item, depth, field, stack)


def _check_other(item: Any, depth: int, field: str, stack: list[tuple[Any, int]]) -> None:
    """``check`` for what the parser does not make itself: its markers, and subclasses of JSON's types."""
    if isinstance(item, NotANumber):
        raise InvalidArgs(f"{field}: {item.name} is not a JSON number", field=field)
    if isinstance(item, OutOfRange):
        raise InvalidArgs(
            f"{field}: an integer of {item.digits} digits is out of range (64-bit integers only)", field=field
        )
    if isinstance(item, str):
        _check_text(item, field)
    elif isinstance(item, bool | float):
        return
    elif isinstance(item, int):
        if not INT64_MIN <= item <= INT64_MAX:
            raise InvalidArgs(f"{field}: an integer is out of range (64-bit integers only)", field=field)
    elif isinstance(item, dict | list):
        if depth > MAX_DEPTH:
            raise InvalidArgs(f"{field} nests deeper than {MAX_DEPTH} levels", field=field)
        if isinstance(item, dict):
            for key, sub in item.items():
                _check_text(key, field)
                stack.append((sub, depth + 1))
        else:
            stack.extend((sub, depth + 1) for sub in item)


def _check_text(text: str, field: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidArgs(f"{field} holds a lone UTF-16 surrogate, which is not text", field=field) from None


def require_text(value: str, field: str, *, limit: int) -> str:
    """A trimmed, non-empty string no longer than ``limit``; otherwise ``InvalidArgs`` naming the field."""
    cleaned = value.strip()
    if not cleaned:
        raise InvalidArgs(f"{field} must not be empty", field=field)
    if len(cleaned) > limit:
        raise InvalidArgs(f"{field} is {len(cleaned)} characters; the limit is {limit}", field=field)
    return cleaned
