"""One run's product tools for an ``openai`` agent: the declarations offered to the model and their calls, made
through the one dispatcher as the agent (what, and why the space rules: ``hangar.agents.tools.catalogue``)."""

from __future__ import annotations

import json
from typing import Any

from hangar.agents.adapters.base import ToolResult
from hangar.core.principal import Principal
from hangar.errors import HangarError
from hangar.rpc.mcp.tools import function_tool, op_of_openai_name, openai_name
from hangar.rpc.op_caller import OpCaller

RESULT_LIMIT = 64 * 1024  # characters of an answer handed back to the model


class RunProductTools:
    """One run's product tools: the declarations offered to the model, and their calls."""

    def __init__(
        self,
        caller: OpCaller | None,
        names: tuple[str, ...],
        principal: Principal,
        *,
        unavailable: str | None = None,
    ) -> None:
        self._caller = caller
        self._names = names
        self._principal = principal
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
            wire = await self._caller.call(self._principal, op_name, self._defaults(op_name, dict(arguments)))
        except HangarError as err:
            body = err.to_dict()
            return ToolResult(False, f"{body['code']}: {body['message']}")
        text = json.dumps(wire, ensure_ascii=False)
        if len(text) > RESULT_LIMIT:
            text = text[:RESULT_LIMIT] + f"\n… (truncated at {RESULT_LIMIT} characters)"
        return ToolResult(True, text)

    def _defaults(self, op_name: str, args: dict[str, Any]) -> dict[str, Any]:
        """The agent's workspace and space where the model named none. Which spaces it may name is the
        credential's rule (``Principal.check_space``), held by the dispatcher and the ops as for any caller."""
        assert self._caller is not None
        spec = self._caller.registry.get(op_name)
        if spec is None:
            return args
        if spec.scope == "workspace":
            args.setdefault("workspace_id", self._principal.workspace_id)
        if "space_id" in spec.args_model.model_fields and args.get("space_id", args.get("spaceId")) is None:
            args.pop("spaceId", None)
            args["space_id"] = self._principal.space_id
        return args
