"""Declaring RPC ops.

An op is an async function decorated with ``@op``. The decorator validates the declaration at import time
(name shape, kind, scope, minimum role, known action classes, an ``args`` parameter typed with a pydantic
model) and attaches a frozen ``OpSpec``; it registers nothing globally. Each part lists its ops and the server
is handed those lists (``OpRegistry``), so what a server serves is explicit.

    @op("members.invite", kind="mutate", scope="workspace", min_role="admin")
    async def members_invite(ctx: OpContext, args: InviteArgs) -> dict[str, str]:
        \"\"\"Mint an invite code for the workspace.\"\"\"

Every op declares what it answers: the return annotation of a read or mutation is a ``Result`` model (or a list of
them), and the dispatcher serializes it, so the registry knows each op's result shape (reference pages, generated
clients and tool schemas read it from ``OpSpec.result_schema``). Watch ops (``kind="watch"``) are async generators
that name their first reply with ``result=`` and what every later value is with ``events=`` (a model, or a union
of models each naming itself by a literal ``type``): the first value yielded is the reply's result, every later
value is sent as an ``{"id", "event"}`` frame until the caller unwatches or the socket closes. A watch of stored
domain events declares an envelope whose event types the composed server fills in (``hangar.rpc.frames``).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, get_args, get_origin, get_type_hints

from pydantic import AliasChoices, AliasGenerator, BaseModel, ConfigDict, Field, TypeAdapter
from pydantic.alias_generators import to_camel, to_snake

from hangar.core.principal import Role

Kind = Literal["read", "mutate", "destructive", "watch"]
OpScope = Literal["server", "workspace"]
KINDS: frozenset[str] = frozenset({"read", "mutate", "destructive", "watch"})
MUTATING_KINDS: frozenset[str] = frozenset({"mutate", "destructive"})

ACTION_CLASSES: frozenset[str] = frozenset(
    {"secretAccess", "networkEgress", "enclosureControl", "processSpawn", "packageInstall"}
)

_NAME = re.compile(r"^[a-z][A-Za-z0-9]*([._][a-z][A-Za-z0-9]*)*$")

F = TypeVar("F", bound=Callable[..., Any])


CONTRACT_SNAKE_CASE: frozenset[str] = frozenset({"space_id", "agent_id"})
"""Arguments the contracts write in snake_case (CONTRACTS sections 6 and 7). Both spellings are accepted like any
other's; this only says how an error names one the caller left out without showing which style they write."""


def _both_spellings(name: str) -> AliasChoices:
    """The spellings an argument answers to: camelCase first (the wire convention, and what schemas show), then
    snake_case, which existing contracts write (``space_id``, ``agent_id``), whichever way Python declares it."""
    camel, snake = to_camel(name), to_snake(name)
    return AliasChoices(camel, snake) if camel != snake else AliasChoices(camel)


class Args(BaseModel):
    """Base for op argument models. ``workspace_id`` is the dispatcher's (the scope key, spelled so); every other
    field is camelCase on the wire and accepted in snake_case too. Unknown fields are refused, naming the field;
    a field declared with its own alias keeps it (and its Python name is accepted, ``populate_by_name``)."""

    # defer_build: a model's validator is built when it is first used, not when its module is imported; the server
    # imports a few hundred of them at start and a request uses a handful.
    model_config = ConfigDict(
        defer_build=True,
        extra="forbid",
        populate_by_name=True,
        alias_generator=AliasGenerator(validation_alias=_both_spellings, serialization_alias=to_camel),
    )


def spellings(model: type[BaseModel], key: str) -> tuple[str, ...]:
    """Every spelling the argument that ``key`` names answers to (``key`` alone when it names none)."""
    for name, info in model.model_fields.items():
        found = [name, *(a for a in (info.alias, info.serialization_alias) if a)]
        if isinstance(info.validation_alias, str):
            found.append(info.validation_alias)
        elif isinstance(info.validation_alias, AliasChoices):
            found.extend(c for c in info.validation_alias.choices if isinstance(c, str))
        if key in found:
            return tuple(dict.fromkeys(found))
    return (key,)


class NoArgs(Args):
    """The arguments of an op that takes none (``workspace_id`` aside, which the dispatcher takes)."""


class Result(BaseModel):
    """Base for op result models: fields are snake_case in Python and camelCase on the wire (the wire
    convention); a field whose contract spells it otherwise says so with ``serialization_alias``."""

    # A field with a default is always sent, so the schema of the wire form lists it as required. Built on first use,
    # as ``Args`` is.
    model_config = ConfigDict(
        defer_build=True,
        alias_generator=to_camel,
        populate_by_name=True,
        from_attributes=True,
        json_schema_serialization_defaults_required=True,
    )


def omitted_when_none() -> Any:
    """A field left out of the wire form while it is ``None`` (the contract omits it rather than sending null)."""
    return Field(None, exclude_if=lambda v: v is None)


class Done(Result):
    """The answer of an op that has nothing to report beyond having been done."""

    ok: bool = True


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
    # What the op answers (a watch: its first reply); ``@op`` refuses an op that does not say.
    result: TypeAdapter[Any]
    # Guardrails never refuse it (``guardrails.set``: a workspace put in read-only mode can be taken out of it).
    governs_guardrails: bool = False
    # What a watch's event frames are (``events=``); None for an op that is not a watch.
    events: TypeAdapter[Any] | None = None
    # Only a person may call it (an approval, a decision an agent would otherwise make about its own work): an
    # agent's credential, over any door or as an in-process tool, is refused (``Dispatcher.admit``).
    people_only: bool = False

    def result_to_wire(self, value: Any) -> Any:
        """The declared result in its wire form."""
        return self.result.dump_python(value, mode="json", by_alias=True)

    @property
    def result_schema(self) -> dict[str, Any]:
        """The JSON Schema of the wire form of the result."""
        return self.result.json_schema(by_alias=True, mode="serialization")

    @property
    def events_schema(self) -> dict[str, Any] | None:
        """The JSON Schema of the wire form of a watch's event frames (envelopes of stored domain events still
        marked: ``hangar.rpc.frames.resolve`` fills them in with the server's event types)."""
        return None if self.events is None else self.events.json_schema(by_alias=True, mode="serialization")

    def event_to_wire(self, value: Any) -> Any:
        """A watch's event in its wire form (a declared model's, by alias; a frame built as a dict as it is)."""
        if self.events is not None and isinstance(value, BaseModel):
            return self.events.dump_python(value, mode="json", by_alias=True)
        return to_wire(value)

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
    result: Any = None,
    events: Any = None,
    people_only: bool = False,
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
        result_type = _result_type(where, kind, hints.get("return"), result)
        if kind == "watch" and events is None:
            raise ValueError(f"{where}: a watch op names what it yields after its reply with events=<model or union>")
        if kind != "watch" and events is not None:
            raise ValueError(f"{where}: only a watch op yields events")
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
            result=TypeAdapter(result_type),
            events=None if events is None else TypeAdapter(events),
            people_only=people_only,
        )
        fn.__op_spec__ = spec  # type: ignore[attr-defined]
        return fn

    return decorate


def _is_result(tp: Any) -> bool:
    """A ``Result`` model, or a list of them."""
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return True
    return get_origin(tp) is list and all(_is_result(a) for a in get_args(tp))


def _result_type(where: str, kind: str, annotation: Any, declared: Any) -> Any:
    """What the op answers; refused at import when undeclared, so the registry can describe every op."""
    if kind == "watch":
        if not _is_result(declared):
            raise ValueError(f"{where}: a watch op names its first reply with result=<pydantic model>")
        return declared
    if declared is not None:
        raise ValueError(f"{where}: only a watch op names its result with result=; annotate the return instead")
    if not _is_result(annotation):
        raise ValueError(f"{where}: the return must be annotated with a Result model or a list of them")
    return annotation


def to_wire(value: Any) -> Any:
    """Models, dicts and lists of them in wire form (a watch's events; untyped results)."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True)
    if isinstance(value, dict):
        return {k: to_wire(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_wire(v) for v in value]
    return value


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
