"""The product MCP endpoint's resources: records readable by URI template, and the watch ops behind them as
subscriptions (CONTRACTS.md section 8: watch ops are subscribable resources, not tools).

A resource is a recipe of op calls, never its own code path: reading
``hangar://workspaces/{workspaceId}/spaces/{spaceId}`` is ``spaces.get`` and ``messages.list {last: 50}`` through
the dispatcher as the caller, so roles, guardrails and audit answer as they do for the tools; subscribing to it
runs ``spaces.watch`` as the caller and turns each event into ``notifications/resources/updated``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

RECENT_MESSAGES = 50

# One op call of a recipe: the key its result goes under (None: merged into the top level), the op, and its
# arguments, where a string ``{name}`` is the URI's variable of that name.
Call = tuple[str | None, str, dict[str, Any]]


@dataclass(frozen=True)
class ResourceKind:
    template: str
    name: str
    description: str
    reads: tuple[Call, ...]
    watch: Call | None = None  # the watch op a subscription runs

    @property
    def pattern(self) -> re.Pattern[str]:
        regex = re.escape(self.template)
        for var in re.findall(r"\{(\w+)\}", self.template):
            regex = regex.replace(re.escape("{" + var + "}"), f"(?P<{var}>[A-Za-z0-9._-]{{1,200}})")
        return re.compile(f"^{regex}$")

    def match(self, uri: str) -> dict[str, str] | None:
        found = self.pattern.match(uri)
        return None if found is None else found.groupdict()


KINDS: tuple[ResourceKind, ...] = (
    ResourceKind(
        "hangar://workspaces/{workspaceId}/spaces/{spaceId}",
        "space",
        f"A space (conversation) with its last {RECENT_MESSAGES} messages; subscribe to hear of new ones.",
        reads=(
            ("space", "spaces.get", {"space_id": "{spaceId}"}),
            (None, "messages.list", {"space_id": "{spaceId}", "last": RECENT_MESSAGES}),
        ),
        watch=(None, "spaces.watch", {"space_id": "{spaceId}"}),
    ),
    ResourceKind(
        "hangar://workspaces/{workspaceId}/tickets/{ticketId}",
        "ticket",
        "A ticket with its direct sub-tickets.",
        reads=(("ticket", "tickets.get", {"ticket_id": "{ticketId}"}),),
    ),
    ResourceKind(
        "hangar://workspaces/{workspaceId}/pipelines/runs/{runId}",
        "pipeline run",
        "A pipeline run with its step runs; subscribe to hear of every step's change.",
        reads=(("run", "pipelines.runs.get", {"run_id": "{runId}"}),),
        watch=(None, "pipelines.runs.watch", {"run_id": "{runId}"}),
    ),
    ResourceKind(
        "hangar://workspaces/{workspaceId}/rigs/{rigId}",
        "rig",
        "A rig: surface, status, controller, memory (closed ones too); subscribe to hear of each change while it "
        "lives (phases, commands, control, ports). Reading does not keep the rig awake.",
        # A read op, not the watch: a watch lane counts as activity and would keep an idle rig alive.
        reads=(("rig", "rig.get", {"rig_id": "{rigId}"}),),
        watch=(None, "rig.watch", {"rig_id": "{rigId}"}),
    ),
    ResourceKind(
        "hangar://workspaces/{workspaceId}/events",
        "domain events",
        "The workspace's domain events, newest last; subscribe to hear of each new one (members and above).",
        reads=((None, "events.list", {"limit": 200}),),
        watch=(None, "events.watch", {}),
    ),
)


def find(uri: str) -> tuple[ResourceKind, dict[str, str]] | None:
    for kind in KINDS:
        found = kind.match(uri)
        if found is not None:
            return kind, found
    return None


def arguments(call: Call, variables: dict[str, str]) -> dict[str, Any]:
    """The call's arguments for one URI, with ``workspace_id`` from it."""
    out: dict[str, Any] = {"workspace_id": variables["workspaceId"]}
    for name, value in call[2].items():
        if isinstance(value, str) and value.startswith("{") and value.endswith("}"):
            out[name] = variables[value[1:-1]]
        else:
            out[name] = value
    return out
