"""Declaring RPC ops.

An op is an async function decorated with ``@op``. The decorator validates the declaration at import time
(name shape, kind, scope, minimum role, known action classes, an ``args`` parameter typed with a pydantic
model) and attaches a frozen ``OpSpec``; it registers nothing globally. Each part lists its ops and the server
is handed those lists (``OpRegistry``), so what a server serves is explicit.

    @op("members.invite", kind="mutate", scope="workspace", min_role="admin")
    async def members_invite(ctx: OpContext, args: InviteArgs) -> dict[str, str]:
        \"\"\"Mint an invite code for the workspace.\"\"\"

Watch ops (``kind="watch"``) are async generators: the first value yielded is the reply's result, every later
value is sent as an ``{"id", "event"}`` frame until the caller unwatches or the socket closes.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, get_type_hints

from pydantic import BaseModel, ConfigDict

from hangar.identity.roles import Role

Kind = Literal["read", "mutate", "destructive", "watch"]
OpScope = Literal["server", "workspace"]
KINDS: frozenset[str] = frozenset({"read", "mutate", "destructive", "watch"})
MUTATING_KINDS: frozenset[str] = frozenset({"mutate", "destructive"})

ACTION_CLASSES: frozenset[str] = frozenset(
    {"secretAccess", "networkEgress", "enclosureControl", "processSpawn", "packageInstall"}
)

_NAME = re.compile(r"^[a-z][A-Za-z0-9]*([._][a-z][A-Za-z0-9]*)*$")

F = TypeVar("F", bound=Callable[..., Any])


class Args(BaseModel):
    """Base for op argument models: unknown fields are refused, naming the field."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class NoArgs(Args):
    pass


@dataclass(frozen=True)
class OpSpec:
    name: str
    kind: Kind
    scope: OpScope
    min_role: Role
    actions: frozenset[str]
    server_owner: bool
    args_model: type[BaseModel]
    handler: Callable[..., Any]
    summary: str
    # Guardrails never refuse it (``guardrails.set``: a workspace put in read-only mode can be taken out of it).
    governs_guardrails: bool = False

    @property
    def mutating(self) -> bool:
        return self.kind in MUTATING_KINDS


def op(
    name: str,
    *,
    kind: Kind,
    scope: OpScope,
    min_role: str | None = None,
    actions: Iterable[str] = (),
    server_owner: bool = False,
    governs_guardrails: bool = False,
) -> Callable[[F], F]:
    """Declare an op. ``min_role`` defaults to guest for reads and watches, member for mutations, for
    workspace-scoped ops. A server-scoped op has no workspace to hold a role in: it takes no ``min_role``
    (``server_owner`` reserves it; anything finer is the handler's rule, like who may create workspaces)."""

    def decorate(fn: F) -> F:
        where = f"op {name!r} ({fn.__module__}.{fn.__qualname__})"
        if not _NAME.match(name):
            raise ValueError(f"{where}: name must be dotted or snake words")
        if kind not in KINDS:
            raise ValueError(f"{where}: kind must be one of {sorted(KINDS)}")
        if scope not in ("server", "workspace"):
            raise ValueError(f"{where}: scope must be server or workspace")
        if scope == "server" and min_role is not None:
            raise ValueError(f"{where}: a server-scoped op has no workspace role to require")
        default_role = "guest" if kind in ("read", "watch") else "member"
        role_name = "guest" if scope == "server" else (min_role or default_role)
        if role_name not in Role.__members__:
            raise ValueError(f"{where}: min_role must be one of {list(Role.__members__)}")
        acts = frozenset(actions)
        unknown = acts - ACTION_CLASSES
        if unknown:
            raise ValueError(f"{where}: unknown action classes {sorted(unknown)}")
        is_gen = inspect.isasyncgenfunction(fn)
        if kind == "watch" and not is_gen:
            raise ValueError(f"{where}: a watch op must be an async generator")
        if kind != "watch" and not inspect.iscoroutinefunction(fn):
            raise ValueError(f"{where}: must be an async function")
        params = list(inspect.signature(fn).parameters)
        if params != ["ctx", "args"]:
            raise ValueError(f"{where}: signature must be (ctx, args)")
        try:
            hints = get_type_hints(fn)
        except NameError as exc:
            raise ValueError(f"{where}: annotations must resolve at import ({exc})") from exc
        model = hints.get("args")
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            raise ValueError(f"{where}: `args` must be annotated with a pydantic model")
        if scope == "workspace" and "workspace_id" in model.model_fields:
            raise ValueError(f"{where}: workspace_id is taken by the dispatcher; do not declare it")
        doc = inspect.getdoc(fn) or ""
        spec = OpSpec(
            name=name,
            kind=kind,
            scope=scope,
            min_role=Role[role_name],
            actions=acts,
            server_owner=server_owner,
            governs_guardrails=governs_guardrails,
            args_model=model,
            handler=fn,
            summary=doc.split("\n\n")[0].replace("\n", " ").strip(),
        )
        fn.__op_spec__ = spec  # type: ignore[attr-defined]
        return fn

    return decorate


def spec_of(fn: object) -> OpSpec:
    spec = getattr(fn, "__op_spec__", None)
    if not isinstance(spec, OpSpec):
        raise ValueError(f"{fn!r} is not declared with @op")
    return spec


class OpRegistry:
    """The ops one server serves, built from explicit lists."""

    def __init__(self, ops: Iterable[object] = ()) -> None:
        self._ops: dict[str, OpSpec] = {}
        for item in ops:
            self.add(item if isinstance(item, OpSpec) else spec_of(item))

    def add(self, spec: OpSpec) -> None:
        if spec.name in self._ops or spec.name == "unwatch":
            raise ValueError(f"op {spec.name!r} is registered twice")
        self._ops[spec.name] = spec

    def get(self, name: str) -> OpSpec | None:
        return self._ops.get(name)

    @property
    def specs(self) -> Mapping[str, OpSpec]:
        return dict(sorted(self._ops.items()))
