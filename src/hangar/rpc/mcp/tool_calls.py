"""The SDK's handlers for ``tools/list`` and ``tools/call``: the catalogue ``tools`` makes of the registry, and each
call as one op call (``ops``).

A refusal or failure is a tool result with ``isError`` and the socket's error code, never a protocol error: the
agent reads why. Only a name that is no tool is a protocol error, as it is no call at all.
"""

from __future__ import annotations

import json
from functools import cached_property
from typing import Any

import mcp.types as mt
from mcp.shared.exceptions import MCPError

from hangar.core.principal import Principal
from hangar.errors import Forbidden, HangarError, Unauthenticated
from hangar.rpc.mcp.backchannel import progress, progress_token
from hangar.rpc.mcp.ops import OpRunner
from hangar.rpc.mcp.request import principal_of, token_of
from hangar.rpc.mcp.tools import catalogue, structured
from hangar.rpc.registry import OpSpec


class ToolCalls:
    """The tools of the registry ``ops`` runs."""

    def __init__(self, ops: OpRunner) -> None:
        self.ops = ops

    @cached_property
    def tools(self) -> list[mt.Tool]:
        """Built on the first ``tools/list``, not at server start: generating every op's schemas takes a while, and
        the registry never changes while the server runs."""
        return [mt.Tool.model_validate(t) for t in catalogue(self.ops.registry)]

    async def list_tools(self, ctx: Any, params: mt.PaginatedRequestParams | None) -> mt.ListToolsResult:
        """The whole catalogue, or for a credential narrower than its holder (an OAuth client's, an agent's) the
        tools it reaches: a client is not offered what every call would refuse."""
        principal = principal_of(ctx)
        if principal is None or not principal.scoped:
            return mt.ListToolsResult(tools=self.tools)
        return mt.ListToolsResult(tools=[t for t in self.tools if _reaches(principal, self.ops.registry.get(t.name))])

    async def call_tool(self, ctx: Any, params: mt.CallToolRequestParams) -> mt.CallToolResult:
        spec = self.ops.registry.get(params.name)
        if spec is None or spec.kind == "watch":
            raise MCPError(mt.INVALID_PARAMS, f"there is no tool named {params.name!r}; tools/list names them all")
        token = token_of(ctx)
        assert self.ops.dispatcher is not None
        if token is None:  # the gate lets nothing through without one; a transport that drops it is refused
            return _tool_error(Unauthenticated("a valid device credential is required"))
        args = dict(params.arguments or {})
        try:
            if progress_token(ctx, params) is None:  # most calls: no heartbeat to run beside the op
                wire = await self.ops.run(ctx, token, spec.name, args)
            else:
                async with progress(ctx, params, spec.name) as report:
                    wire = await self.ops.run(ctx, token, spec.name, args, report)
        except HangarError as err:
            return _tool_error(err)
        content = structured(wire)
        text = json.dumps(content, ensure_ascii=False)
        return mt.CallToolResult(content=[mt.TextContent(text=text)], structured_content=content)


def _reaches(principal: Principal, spec: OpSpec | None) -> bool:
    if spec is None:
        return False
    workspace_id = principal.workspace_id if spec.scope == "workspace" else None
    try:
        principal.check_reach(workspace_id, changes=spec.mutating, action=spec.name)
    except Forbidden:
        return False
    return True


def _tool_error(err: HangarError) -> mt.CallToolResult:
    body = err.to_dict()
    return mt.CallToolResult(
        content=[mt.TextContent(text=f"{body['code']}: {body['message']}")],
        structured_content={"error": body},
        is_error=True,
    )
