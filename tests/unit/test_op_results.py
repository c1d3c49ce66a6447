"""Every op declares what it answers, so reference pages, clients and tool schemas can be generated from the
registry (``@op`` refuses an op that does not; this checks the declared shapes are useful)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from hangar.rpc.registry import OpSpec, Result, op, spec_of
from hangar.server.parts import all_parts


def _ops() -> list[OpSpec]:
    return [spec_of(fn) for part in all_parts() for fn in part.ops]


@pytest.mark.parametrize("spec", _ops(), ids=lambda spec: spec.name)
def test_op_declares_its_result(spec: OpSpec) -> None:
    schema = spec.result_schema
    # A declared result has a shape a client can rely on, not just "any JSON".
    assert {"properties", "items", "anyOf", "additionalProperties"} & set(schema), schema


class _Args(BaseModel):
    pass


class _Answer(Result):
    value: int


def test_an_op_without_a_declared_result_is_refused_at_import() -> None:
    async def untyped(ctx: Any, args: _Args) -> dict[str, Any]:
        return {}

    with pytest.raises(ValueError, match="return must be annotated with a Result model"):
        op("x.untyped", kind="read", scope="server")(untyped)

    async def watch(ctx: Any, args: _Args) -> Any:
        yield {}

    with pytest.raises(ValueError, match="result=<pydantic model>"):
        op("x.watch", kind="watch", scope="server")(watch)

    async def typed(ctx: Any, args: _Args) -> _Answer:
        return _Answer(value=1)

    assert spec_of(op("x.typed", kind="read", scope="server")(typed)).result_to_wire(_Answer(value=1)) == {"value": 1}
