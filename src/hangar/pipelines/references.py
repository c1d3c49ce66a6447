"""The records a template names (agents, teams, spaces, repos, other templates), looked up in the caller's
workspace when the template is validated or saved, so that ``agentId: analyst`` is refused at its step instead of
failing the run later ("agent analyst does not exist").

A body declares which of its settings name a record (``ConfigField(..., refers="agent")``); only the settings of
the step's own body are checked (another body ignores them). A value holding a ``{{key}}`` placeholder is filled
in at run time and cannot be checked now.

The pipelines part stands below the parts that own agents, teams, spaces and repos, so it looks them up through
their public ops (``agents.list``, ``teams.list``, ``spaces.get``, ``repos.list``), called as the caller through
the one dispatcher (``OpCaller``): the caller's own reach and role decide what they can name, and a record they
cannot see is as unknown to them as one that does not exist. Each problem names the step and the field, in the
form the other template problems take (``step ask: config.agentId: …``), so an editor puts it at its line.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from hangar.errors import Forbidden, HangarError, NotFound
from hangar.pipelines.bodies.spec import BodyRegistry, ConfigField
from hangar.pipelines.model import Template
from hangar.pipelines.store import PipelineStore
from hangar.rpc.context import OpContext
from hangar.rpc.op_caller import OpCaller

PLACEHOLDER = "{{"


@dataclass(frozen=True)
class Reference:
    step_id: str
    field: str  # as the template spells it: ``agentId``, ``extras.spaceId``, ``repoIds``
    kind: str
    value: str  # for a repo: the whole spec (``api@main``)

    @property
    def where(self) -> str:
        return f"step {self.step_id}: config.{self.field}"


def _values(f: ConfigField, wire: Mapping[str, Any]) -> list[Any]:
    raw = f.value_in(wire)
    if raw is None or raw == "":
        return []
    return list(raw) if isinstance(raw, list | tuple) else [raw]


def references(template: Template, bodies: BodyRegistry) -> Iterator[Reference]:
    """Every checkable reference of the template, in step order."""
    for step in template.steps:
        spec = bodies.get(step.body_key)
        if spec is None:
            continue
        wire = step.config.model_dump(by_alias=True)
        for f in spec.config:
            if f.refers is None:
                continue
            for value in _values(f, wire):
                text = value if isinstance(value, str) else str(value)
                if PLACEHOLDER not in text:
                    yield Reference(step.id, f.name, f.refers, text)


def repo_ref(spec: str) -> str:
    """The repo a ``repoIds`` entry names: ``<ref>``, ``<ref>@<branch>`` or ``<ref>#<number>`` (a repo's id or name
    holds neither ``@`` nor ``#``; the spec's own form is checked when the space is opened)."""
    ref = spec.strip().partition("@")[0]
    return ref.partition("#")[0]


@dataclass
class _Known:
    """What the caller can see of one kind: ids, and names (to tell someone who typed a name which id it has)."""

    ids: set[str] = field(default_factory=set)
    names: set[str] = field(default_factory=set)  # exactly as stored (a repo is found by its name too)
    by_name: dict[str, str] = field(default_factory=dict)  # case-folded name -> id, for the hint
    refused: str | None = None  # the caller may not read this kind at all: why


Call = Callable[[str, dict[str, Any]], Awaitable[Any]]


async def _listed(call: Call, op_name: str, key: str) -> _Known:
    """The ids and names of every row of a list op's answer (``{key: [{id, name, ...}]}``)."""
    try:
        rows = (await call(op_name, {}))[key]
    except HangarError as exc:
        return _Known(refused=exc.message)
    known = _Known()
    for row in rows:
        known.ids.add(str(row["id"]))
        known.names.add(str(row["name"]))
        known.by_name.setdefault(str(row["name"]).casefold(), str(row["id"]))
    return known


_LIST_OPS: dict[str, tuple[str, str]] = {
    "agent": ("agents.list", "agents"),
    "team": ("teams.list", "teams"),
    "repo": ("repos.list", "repos"),
}


class _Lookups:
    """The caller's view of the workspace, each kind fetched once (a space once per id)."""

    def __init__(self, call: Call, template_ids: Callable[[], Awaitable[set[str]]]) -> None:
        self._call = call
        self._template_ids = template_ids
        self._lists: dict[str, _Known] = {}
        self._spaces: dict[str, str | None] = {}

    async def _list(self, kind: str) -> _Known:
        if kind not in self._lists:
            listed = _LIST_OPS.get(kind)
            if listed is not None:
                self._lists[kind] = await _listed(self._call, *listed)
            else:  # templates: this part's own
                self._lists[kind] = _Known(ids=await self._template_ids())
        return self._lists[kind]

    async def _space(self, space_id: str) -> str | None:
        """None when the caller can see the space, else why not."""
        if space_id not in self._spaces:
            try:
                await self._call("spaces.get", {"spaceId": space_id})
                self._spaces[space_id] = None
            except (NotFound, Forbidden):
                self._spaces[space_id] = f"no space {space_id!r} in this workspace that you can see"
            except HangarError as exc:
                self._spaces[space_id] = f"space {space_id!r} cannot be checked: {exc.message}"
        return self._spaces[space_id]

    async def problem(self, ref: Reference) -> str | None:
        if ref.kind == "space":
            why = await self._space(ref.value)
            return f"{ref.where}: {why}" if why else None
        known = await self._list(ref.kind)
        noun = "pipeline template" if ref.kind == "template" else ref.kind
        if known.refused is not None:
            return f"{ref.where}: the {noun} {ref.value!r} cannot be checked: {known.refused}"
        if ref.kind == "repo":
            target = repo_ref(ref.value)
            if target in known.ids or target in known.names:
                return None  # a repo is named by id or by name, as the space's checkout finds it
            return f"{ref.where}: {ref.value!r} names no repo registered in this workspace"
        if ref.value in known.ids:
            return None
        hint = ""
        named = known.by_name.get(ref.value.casefold())
        if named is not None:
            hint = f" (the {noun} named {ref.value!r} has the id {named}; a template names it by id)"
        return f"{ref.where}: no {noun} with the id {ref.value!r} in this workspace{hint}"


async def problems(ctx: OpContext, template: Template, bodies: BodyRegistry, store: PipelineStore) -> list[str]:
    """One problem per reference the caller's workspace does not hold (or the caller cannot see)."""
    refs = list(references(template, bodies))
    if not refs:
        return []
    caller = ctx.app.service(OpCaller)
    ws = ctx.ws

    async def call(op_name: str, args: dict[str, Any]) -> Any:
        return await caller.call(ctx.principal, op_name, {"workspace_id": ws, **args}, door=ctx.door)

    async def template_ids() -> set[str]:
        return {t.id for t in await store.list_templates(ws)}

    lookups = _Lookups(call, template_ids)
    found = []
    for ref in refs:
        problem = await lookups.problem(ref)
        if problem is not None and problem not in found:
            found.append(problem)
    return found
