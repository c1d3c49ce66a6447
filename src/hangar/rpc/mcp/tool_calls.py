"""The SDK's handlers for ``tools/list`` and ``tools/call``: the catalogue ``tools`` makes of the registry, and each
call as one op call (``ops``).

A refusal or failure is a tool result with ``isError`` and the socket's error code, never a protocol error: the
agent reads why. Only a name that is no tool is a protocol error, as it is no call at all.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable
from functools import cached_property
from typing import Any

import mcp.types as mt
from mcp.shared.exceptions import MCPError

from hangar.core.principal import Principal
from hangar.errors import Forbidden, HangarError, Unauthenticated
from hangar.rpc.mcp.backchannel import progress, progress_token
from hangar.rpc.mcp.ops import Caller, OpRunner
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
        """The SDK's handler: the call as the caller of the request it serves, with progress where asked."""
        spec = self.tool(params.name)
        token = token_of(ctx)
        if token is None:  # the gate lets nothing through without one; a transport that drops it is refused
            return mt.CallToolResult.model_validate(
                _tool_error(Unauthenticated("a valid device credential is required"))
            )
        args = dict(params.arguments or {})
        if progress_token(ctx, params) is None:  # most calls: no heartbeat to run beside the op
            return mt.CallToolResult.model_validate(await _answered(self.ops.run(ctx, token, spec.name, args)))
        async with progress(ctx, params, spec.name) as report:
            return mt.CallToolResult.model_validate(await _answered(self.ops.run(ctx, token, spec.name, args, report)))

    async def call_plain(self, caller: Caller, params: mt.CallToolRequestParams) -> dict[str, Any]:
        """A call that asked for no progress, as ``caller`` (the hot path, ``exchange``): the same op through the
        same dispatcher, answered as the SDK's handler answers, in the wire form the revision's shaping takes
        (it validates it with the SDK's types)."""
        spec = self.tool(params.name)
        return await _answered(self.ops.call(caller, spec.name, dict(params.arguments or {})))

    def tool(self, name: str) -> OpSpec:
        """The op a tool name calls; a name that is no tool (or a watch) is a protocol error, as from the SDK."""
        spec = self.ops.registry.get(name)
        if spec is None or spec.kind == "watch":
            raise MCPError(mt.INVALID_PARAMS, f"there is no tool named {name!r}; tools/list names them all")
        return spec


async def _answered(running: Awaitable[Any]) -> dict[str, Any]:
    """The op's answer as a tool result (``CallToolResult``'s wire form, one for both paths): its result
    structured and as text, or its refusal as a tool error."""
    try:
        wire = await running
    except HangarError as err:
        return _tool_error(err)
    content = structured(wire)
    text = json.dumps(content, ensure_ascii=False)
    return {"content": [{"type": "text", "text": text}], "structuredContent": content, "isError": False}


def _reaches(principal: Principal, spec: OpSpec | None) -> bool:
    if spec is None:
        return False
    workspace_id = principal.workspace_id if spec.scope == "workspace" else None
    try:
        principal.check_reach(workspace_id, changes=spec.mutating, action=spec.name)
    except Forbidden:
        return False
    return True


def _tool_error(err: HangarError) -> dict[str, Any]:
    body = err.to_dict()
    return {
        "content": [{"type": "text", "text": f"{body['code']}: {body['message']}"}],
        "structuredContent": {"error": body},
        "isError": True,
    }
