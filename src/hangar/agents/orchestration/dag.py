"""The work DAG of an orchestration: sub-tickets (nodes) and what each waits for (``dependsOn``).

The planner agent proposes it; a person may replace it (add or remove nodes and edges) until work starts. Every
DAG stored passes ``check``: node keys are unique names, dependencies name nodes of the DAG, there is no cycle
(the refusal names one, ``a → b → a``), and the size is from one node to ``MAX_NODES``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hangar.errors import InvalidArgs

# How many sub-tickets one orchestration may have (each is a sub-ticket, a space and an agent run).
MAX_NODES = 50
TITLE_MAX = 300
DESCRIPTION_MAX = 20_000
# A node key becomes part of step ids and state keys (``work_<key>``, ``out_<key>``): a plain lower-case name.
KEY = re.compile(r"^[a-z][a-z0-9_]{0,39}$")


@dataclass(frozen=True)
class Node:
    key: str
    title: str
    description: str = ""
    depends_on: tuple[str, ...] = ()
    agent_id: str | None = None
    sub_ticket_id: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "title": self.title,
            "description": self.description,
            "dependsOn": list(self.depends_on),
            "agentId": self.agent_id,
            "subTicketId": self.sub_ticket_id,
        }


@dataclass(frozen=True)
class Dag:
    nodes: tuple[Node, ...] = field(default=())

    @property
    def keys(self) -> list[str]:
        return [n.key for n in self.nodes]

    def node(self, key: str) -> Node:
        for n in self.nodes:
            if n.key == key:
                return n
        raise KeyError(key)

    def to_json(self) -> list[dict[str, Any]]:
        return [n.to_json() for n in self.nodes]


def _text(raw: Mapping[str, Any], name: str, where: str, limit: int, *, required: bool) -> str:
    value = raw.get(name)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise InvalidArgs(f"{where}.{name} must be a non-empty string", field=f"{where}.{name}")
    if len(value) > limit:
        raise InvalidArgs(f"{where}.{name} is longer than {limit} characters", field=f"{where}.{name}")
    return value.strip() if required else value


def parse(raw: Any, *, field_name: str = "nodes") -> Dag:
    """A DAG from its wire form (a list of ``{key, title, description?, dependsOn?, agentId?}``), checked."""
    if not isinstance(raw, list):
        raise InvalidArgs(f"{field_name} must be a list of sub-tickets", field=field_name)
    if not raw:
        raise InvalidArgs(f"{field_name} is empty; an orchestration needs at least one sub-ticket", field=field_name)
    if len(raw) > MAX_NODES:
        raise InvalidArgs(
            f"{field_name} has {len(raw)} sub-tickets; an orchestration holds at most {MAX_NODES}", field=field_name
        )
    nodes: list[Node] = []
    for i, item in enumerate(raw):
        where = f"{field_name}[{i}]"
        if not isinstance(item, Mapping):
            raise InvalidArgs(f"{where} must be an object", field=where)
        key = item.get("key")
        if not isinstance(key, str) or not KEY.match(key):
            raise InvalidArgs(
                f"{where}.key must be a lower-case name of letters, digits and _ (at most 40), not {key!r}",
                field=f"{where}.key",
            )
        deps = item.get("dependsOn") or []
        if not isinstance(deps, list) or not all(isinstance(d, str) for d in deps):
            raise InvalidArgs(f"{where}.dependsOn must be a list of node keys", field=f"{where}.dependsOn")
        agent = item.get("agentId")
        if agent is not None and (not isinstance(agent, str) or not agent):
            raise InvalidArgs(f"{where}.agentId must be an agent id", field=f"{where}.agentId")
        sub = item.get("subTicketId")
        nodes.append(
            Node(
                key=key,
                title=_text(item, "title", where, TITLE_MAX, required=True),
                description=_text(item, "description", where, DESCRIPTION_MAX, required=False),
                depends_on=tuple(dict.fromkeys(deps)),
                agent_id=agent,
                sub_ticket_id=sub if isinstance(sub, str) and sub else None,
            )
        )
    dag = Dag(tuple(nodes))
    check(dag, field_name=field_name)
    return dag


def check(dag: Dag, *, field_name: str = "nodes") -> None:
    seen: set[str] = set()
    for n in dag.nodes:
        if n.key in seen:
            raise InvalidArgs(f"{field_name}: node key {n.key!r} is used twice", field=field_name)
        seen.add(n.key)
    for n in dag.nodes:
        for d in n.depends_on:
            if d not in seen:
                raise InvalidArgs(f"{field_name}: node {n.key!r} depends on unknown node {d!r}", field=field_name)
            if d == n.key:
                raise InvalidArgs(f"{field_name}: node {n.key!r} depends on itself", field=field_name)
    cycle = find_cycle({n.key: n.depends_on for n in dag.nodes})
    if cycle:
        raise InvalidArgs(f"{field_name}: the dependencies form a cycle: {' → '.join(cycle)}", field=field_name)


def find_cycle(deps: Mapping[str, Sequence[str]]) -> list[str]:
    """One cycle of the graph (``[a, b, a]``: a waits for b, which waits for a), or ``[]``. Iterative: a deep
    chain does not reach Python's recursion limit."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for root in deps:
        if state.get(root):
            continue
        path: list[str] = [root]
        stack: list[Iterator[str]] = [iter(deps.get(root, ()))]
        state[root] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
                continue
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if not state.get(nxt):
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(deps.get(nxt, ())))
    return []


def order(dag: Dag) -> list[str]:
    """The node keys in an order where each comes after what it depends on (the DAG is checked)."""
    done: list[str] = []
    placed: set[str] = set()
    pending = list(dag.nodes)
    while pending:
        ready = [n for n in pending if set(n.depends_on) <= placed]
        for n in ready:
            done.append(n.key)
            placed.add(n.key)
        pending = [n for n in pending if n.key not in placed]
    return done
