from __future__ import annotations

import pytest

from hangar.core.principal import Role
from hangar.rpc.context import OpContext
from hangar.rpc.registry import Args, Done, NoArgs, OpRegistry, op, spec_of


class A(Args):
    x: int


class WithWs(Args):
    workspace_id: str


def test_decorator_attaches_a_frozen_spec_and_registers_nothing() -> None:
    @op("demo.read", kind="read", scope="workspace")
    async def demo(ctx: OpContext, args: A) -> Done:
        """Read a demo.

        More text."""
        return Done()

    spec = spec_of(demo)
    assert spec.min_role is Role.guest and spec.summary == "Read a demo."
    with pytest.raises(AttributeError):
        spec.name = "x"  # type: ignore[misc]
    assert OpRegistry().get("demo.read") is None
    assert OpRegistry([demo]).get("demo.read") is spec


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"kind": "poke"}, "kind"),
        ({"scope": "galaxy"}, "scope"),
        ({"min_role": "king"}, "min_role"),
        ({"scope": "server", "min_role": "admin"}, "server-scoped op has no workspace role"),
        ({"actions": ["teleport"]}, "unknown action classes"),
    ],
)
def test_bad_declarations_fail_at_import(kwargs: dict[str, object], message: str) -> None:
    base: dict[str, object] = {"kind": "read", "scope": "workspace"}
    base.update(kwargs)
    with pytest.raises(ValueError, match=message):

        @op("demo.bad", **base)  # type: ignore[arg-type]
        async def bad(ctx: OpContext, args: NoArgs) -> None:
            return None


def test_signature_and_model_are_checked() -> None:
    with pytest.raises(ValueError, match="pydantic model"):

        @op("demo.x", kind="read", scope="server")
        async def x(ctx: OpContext, args: dict) -> None:  # type: ignore[type-arg]
            return None

    with pytest.raises(ValueError, match="async generator"):

        @op("demo.w", kind="watch", scope="server")
        async def w(ctx: OpContext, args: NoArgs) -> None:
            return None

    with pytest.raises(ValueError, match="workspace_id"):

        @op("demo.ws", kind="read", scope="workspace")
        async def ws(ctx: OpContext, args: WithWs) -> None:
            return None


def test_duplicate_names_refused() -> None:
    @op("demo.dup", kind="read", scope="server")
    async def one(ctx: OpContext, args: NoArgs) -> Done:
        return Done()

    with pytest.raises(ValueError, match="twice"):
        OpRegistry([one, one])
