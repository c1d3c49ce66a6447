"""``{{key}}`` substitution: values come from pipeline state, then the trigger payload; dotted paths reach into
maps (and list indexes); a missing key is an error naming the key (CONTRACTS §5)."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from typing import Any

from hangar.errors import InvalidArgs

_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*\}\}")
ABSENT = object()


class MissingKey(InvalidArgs):
    """A ``{{key}}`` (or an input key) names nothing in the state or the trigger payload."""

    def __init__(self, key: str) -> None:
        super().__init__(f"{{{{{key}}}}} is not in the pipeline state or the trigger payload", field=key)
        self.key = key


def walk(root: Mapping[str, Any], path: str) -> Any:
    if path in root:
        return root[path]
    cur: Any = root
    for part in path.split("."):
        if isinstance(cur, Mapping) and part in cur:
            cur = cur[part]
        elif isinstance(cur, list) and part.isdigit() and int(part) < len(cur):
            cur = cur[int(part)]
        else:
            return ABSENT
    return cur


def lookup(path: str, state: Mapping[str, Any], payload: Mapping[str, Any]) -> Any:
    """The value at ``path`` in state, else in the payload; raises ``MissingKey``."""
    for root in (state, payload):
        value = walk(root, path)
        if value is not ABSENT:
            return value
    raise MissingKey(path)


def has_key(path: str, state: Mapping[str, Any], payload: Mapping[str, Any]) -> bool:
    return any(walk(root, path) is not ABSENT for root in (state, payload))


def as_text(value: Any) -> str:
    """How a state value reads inside a prompt or script: strings verbatim, everything else as JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def placeholders(text: str) -> list[str]:
    return [m.group(1) for m in _PLACEHOLDER.finditer(text)]


def render(text: str, state: Mapping[str, Any], payload: Mapping[str, Any], *, shell: bool = False) -> str:
    """Fill every ``{{key}}``; with ``shell`` each value is quoted as one shell word."""

    def fill(m: re.Match[str]) -> str:
        value = as_text(lookup(m.group(1), state, payload))
        return shlex.quote(value) if shell else value

    return _PLACEHOLDER.sub(fill, text)
