"""The docs tools' result text is exactly ``json.dumps(value, indent=1, ensure_ascii=False)``."""

from __future__ import annotations

import enum
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from hangar.site import jsontext

_scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text()
_values = st.recursive(
    _scalars, lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5), max_leaves=30
)


@settings(max_examples=500)
@given(_values)
def test_any_json_value_is_written_as_the_standard_library_writes_it(value: Any) -> None:
    assert jsontext.dumps(value) == json.dumps(value, indent=1, ensure_ascii=False)


class _Count(enum.IntEnum):
    ONE = 1


def test_what_the_fast_path_does_not_know_is_left_to_the_standard_library() -> None:
    for value in ({1: "a", "b": [None]}, {"a": _Count.ONE}, [{"x": (1, 2)}], {"nested": {2.5: True}}):
        assert jsontext.dumps(value) == json.dumps(value, indent=1, ensure_ascii=False)


def test_a_search_result_shape() -> None:
    value = {"query": "rig «é»\n", "count": 1, "results": [{"slug": "a", "snippet": "**x** … y", "score": 1.5}]}
    assert jsontext.dumps(value) == json.dumps(value, indent=1, ensure_ascii=False)
