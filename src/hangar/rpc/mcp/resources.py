"""The product MCP endpoint's resources: records readable by URI template, and the watch ops behind them as
subscriptions (CONTRACTS.md section 8: watch ops are subscribable resources, not tools).

A resource is a recipe of op calls, never its own code path: reading
``hangar://workspaces/{workspaceId}/spaces/{spaceId}`` is ``spaces.get`` and ``messages.list {last: 50}`` through
the dispatcher as the caller, so roles, guardrails and audit answer as they do for the tools; subscribing to it
runs ``spaces.watch`` as the caller and turns each event into ``notifications/resources/updated``.

``Resources`` holds the SDK's handlers that list and read them, and starts the watch behind one for whoever
follows it (``subscriptions``). A refusal is a protocol error here (a read has no result to carry ``isError``),
its message starting with the socket's error code.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import mcp.types as mt
from mcp.shared.exceptions import MCPError

from hangar.errors import HangarError
from hangar.rpc.context import OpContext
from hangar.rpc.frames import resolve
from hangar.rpc.mcp.ops import OpRunner
from hangar.rpc.mcp.request import token_of
from hangar.rpc.mcp.tools import structured

RECENT_MESSAGES = 50
RESOURCE_NOT_FOUND = -32002  # MCP's code for a resource that is not there
REFUSED = -32001  # an op refused reading or following a resource; the message starts with the socket's code
EVENTS_META = "hangar/events"  # the ``_meta`` key of a subscribable resource's template: its events' schema

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


class Resources:
    """The resources of ``KINDS``, read and watched through ``ops``."""

    def __init__(self, ops: OpRunner) -> None:
        self.ops = ops

    async def list_resources(self, ctx: Any, params: mt.PaginatedRequestParams | None) -> mt.ListResourcesResult:
        return mt.ListResourcesResult(resources=[])  # every resource is named by a template

    async def list_templates(
        self, ctx: Any, params: mt.PaginatedRequestParams | None
    ) -> mt.ListResourceTemplatesResult:
        templates = [
            mt.ResourceTemplate(
                uri_template=k.template,
                name=k.name,
                description=k.description,
                mime_type="application/json",
                _meta=self.events_of(k),
            )
            for k in KINDS
        ]
        return mt.ListResourceTemplatesResult(resource_templates=templates)

    def events_of(self, kind: ResourceKind) -> dict[str, Any] | None:
        """What the watch behind a subscribable resource sends after its reply, as a JSON Schema (``_meta`` key
        ``hangar/events``): a union of one shape per event type, named by its ``type``; the domain events in it
        are those the server's parts declare."""
        spec = None if kind.watch is None else self.ops.registry.get(kind.watch[1])
        schema = None if spec is None else spec.events_schema
        if schema is None:
            return None
        app = None if self.ops.dispatcher is None else self.ops.dispatcher.app
        return {EVENTS_META: resolve(schema, app.bus.registry.classes() if app is not None else ())}

    async def read(self, ctx: Any, params: mt.ReadResourceRequestParams) -> mt.ReadResourceResult:
        uri = str(params.uri)
        kind, variables = _resource(uri)
        token = token_of(ctx) or ""
        content: dict[str, Any] = {}
        try:
            for call in kind.reads:
                wire = await self.ops.run(ctx, token, call[1], arguments(call, variables))
                if call[0] is None:
                    content.update(structured(wire))
                else:
                    content[call[0]] = wire
        except HangarError as err:
            raise _resource_error(err) from None
        text = json.dumps(content, ensure_ascii=False)
        return mt.ReadResourceResult(
            contents=[mt.TextResourceContents(uri=uri, mime_type="application/json", text=text)]
        )

    def followable(self, uri: str) -> tuple[ResourceKind, dict[str, str]]:
        """The resource at ``uri`` when it can be followed (has a watch op); a protocol error otherwise."""
        kind, variables = _resource(uri)
        if kind.watch is None:
            raise MCPError(mt.INVALID_PARAMS, f"{kind.name} resources change only when read again; read {uri} instead")
        return kind, variables

    async def start_watch(self, ctx: Any, token: str, uri: str) -> tuple[AsyncIterator[Any], OpContext]:
        """The resource's watch op, run as the caller and started (``OpRunner.start_watch``): a refusal or a
        missing record is answered here."""
        kind, variables = self.followable(uri)
        assert kind.watch is not None
        spec = self.ops.registry.get(kind.watch[1])
        assert spec is not None
        try:
            return await self.ops.start_watch(ctx, token, spec, arguments(kind.watch, variables))
        except HangarError as err:
            raise _resource_error(err) from None


def _resource(uri: str) -> tuple[ResourceKind, dict[str, str]]:
    found = find(uri)
    if found is None:
        raise MCPError(RESOURCE_NOT_FOUND, f"no resource at {uri!r}; resources/templates/list names them")
    return found


def _resource_error(err: HangarError) -> MCPError:
    body = err.to_dict()
    code = RESOURCE_NOT_FOUND if body["code"] == "not_found" else REFUSED
    return MCPError(code, f"{body['code']}: {body['message']}")
