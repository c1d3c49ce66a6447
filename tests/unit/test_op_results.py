"""Every op declares what it answers, so reference pages, clients and tool schemas can be generated from the
registry. Parts join ``TYPED_PARTS`` as their ops declare results; once every part has, the filter goes."""

from __future__ import annotations

import pytest

from hangar.rpc.registry import OpSpec, spec_of
from hangar.server.parts import all_parts

TYPED_PARTS = frozenset({"oversight", "identity", "sso", "workspace"})


def _typed_ops() -> list[OpSpec]:
    return [spec_of(fn) for part in all_parts() if part.name in TYPED_PARTS for fn in part.ops]


def test_the_typed_parts_exist() -> None:
    # A renamed part would otherwise leave its ops unchecked without a word.
    assert TYPED_PARTS.issubset(part.name for part in all_parts())


@pytest.mark.parametrize("spec", _typed_ops(), ids=lambda spec: spec.name)
def test_op_declares_its_result(spec: OpSpec) -> None:
    assert spec.result is not None, f"{spec.name} answers untyped values: annotate its return with a Result model"
    schema = spec.result_schema
    assert schema is not None
    # A declared result has a shape a client can rely on, not just "any JSON".
    assert {"properties", "items", "anyOf", "additionalProperties"} & set(schema), schema
