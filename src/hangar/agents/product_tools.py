"""One run's product tools for an ``openai`` agent: the declarations offered to the model and their calls, made
through the one dispatcher as the agent (what, and why the space rules: ``hangar.agents.product_catalogue``)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from hangar.agents.adapters.base import ToolResult
from hangar.agents.product_catalogue import RIG_VERBS
from hangar.core.principal import Principal
from hangar.errors import Forbidden, HangarError
from hangar.rpc.mcp_tools import function_tool, op_of_openai_name, openai_name
from hangar.rpc.op_caller import OpCaller
from hangar.rpc.registry import OpSpec

RESULT_LIMIT = 64 * 1024  # characters of an answer handed back to the model


def _takes(spec: OpSpec, field: str) -> bool:
    return field in spec.args_model.model_fields


def _given(args: dict[str, Any], snake: str, camel: str) -> Any:
    return args[snake] if snake in args else args.get(camel)


class RunProductTools:
    """One run's product tools: the declarations offered to the model, and their calls."""

    def __init__(
        self,
        caller: OpCaller | None,
        names: tuple[str, ...],
        principal: Principal,
        space_id: str,
        *,
        unavailable: str | None = None,
    ) -> None:
        self._caller = caller
        self._names = names
        self._principal = principal
        self._space_id = space_id
        self._unavailable = unavailable
        self._by_tool = {openai_name(n): n for n in names}

    def specs(self) -> list[dict[str, Any]]:
        if self._caller is None:
            return []
        specs = (self._caller.registry.get(n) for n in self._names)
        return [function_tool(s) for s in specs if s is not None]

    def handles(self, tool_name: str) -> bool:
        return tool_name in self._by_tool or op_of_openai_name(tool_name) in self._names

    async def call(self, tool_name: str, arguments: dict[str, Any]) -> ToolResult:
        op_name = self._by_tool.get(tool_name, op_of_openai_name(tool_name))
        if self._caller is None:
            why = self._unavailable or "this process has no dispatcher"
            return ToolResult(False, f"unavailable: {op_name} cannot be called here: {why}")
        try:
            args = await self._in_own_space(op_name, dict(arguments))
            wire = await self._caller.call(self._principal, op_name, args)
        except HangarError as err:
            body = err.to_dict()
            return ToolResult(False, f"{body['code']}: {body['message']}")
        text = json.dumps(wire, ensure_ascii=False)
        if len(text) > RESULT_LIMIT:
            text = text[:RESULT_LIMIT] + f"\n… (truncated at {RESULT_LIMIT} characters)"
        return ToolResult(True, text)

    async def _in_own_space(self, op_name: str, args: dict[str, Any]) -> dict[str, Any]:
        """The agent's workspace and space as defaults; the rig verbs held to its space."""
        assert self._caller is not None
        spec = self._caller.registry.get(op_name)
        if spec is None:
            return args
        if spec.scope == "workspace":
            args.setdefault("workspace_id", self._principal.workspace_id)
        if _takes(spec, "space_id"):
            space = _given(args, "space_id", "spaceId")
            if space is None:
                args["space_id"] = space = self._space_id
            if op_name in RIG_VERBS and space != self._space_id:
                raise Forbidden(f"{op_name} acts in the space this agent works in ({self._space_id}), not {space}")
        rig_id = _given(args, "rig_id", "rigId")
        if op_name in RIG_VERBS and _takes(spec, "rig_id") and isinstance(rig_id, str):
            await self._check_rig_space(op_name, args, rig_id)
        return args

    async def _check_rig_space(self, op_name: str, args: dict[str, Any], rig_id: str) -> None:
        """A verb on a rig of another space is refused. The rig's space is read through ``rig_list`` as the
        agent (a read its role allows, whether or not ``rig_list`` is among its tools), so a workspace the agent
        cannot reach stays unread; a rig the list does not show is left to the op to answer."""
        assert self._caller is not None
        if self._caller.registry.get("rig_list") is None or args.get("workspace_id") != self._principal.workspace_id:
            return
        tools = self._principal.tools
        reader = replace(self._principal, tools=None if tools is None else tools | {"rig_list"})
        rows = await self._caller.call(reader, "rig_list", {"workspace_id": args["workspace_id"]})
        space = next((r.get("spaceId") for r in rows if isinstance(r, dict) and r.get("rigId") == rig_id), None)
        if space is not None and space != self._space_id:
            raise Forbidden(f"{op_name}: rig {rig_id} is in another space; this agent works in {self._space_id}")
