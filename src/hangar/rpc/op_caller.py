"""Op calls made inside the server for a caller it vouches for itself: Hangar's own agents, and the people the
chat bridge acts for (their chat account linked to them; door ``chat``).

An agent run driven by this process calls ops as tools without a credential of its own: its ``Principal`` (the
agent, its workspace, its tools) is built by whoever drives the run. The call still goes through the one
dispatcher, in the socket's order of checks (reach of the principal, role, arguments, guardrails), and its audit
rows name the agent and the door (``agent``). Nobody can be asked mid-call, so an ask-first guardrail refuses,
naming the rule, as it does for any door that cannot ask.

The composition (the server, the command line) provides one ``OpCaller`` (``app.maybe_service(OpCaller)``) before
the parts start, with the address of the product's MCP endpoint where this process serves one: a process that
serves none (a command-line pipeline run) says why, so a program started there hears it instead of finding
nothing. Its dispatcher is attached once the parts have started (the dispatcher needs what they provide); a call
made before (a run resumed while the parts start) waits for it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from hangar.core.principal import Principal
from hangar.errors import Unavailable, UnknownOp
from hangar.rpc.dispatcher import Dispatcher
from hangar.rpc.mcp.tools import is_tool
from hangar.rpc.registry import OpRegistry, OpSpec

AGENT_DOOR = "agent"
START_WAIT_S = 60.0


class OpCaller:
    def __init__(
        self,
        registry: OpRegistry,
        *,
        mcp_url: Callable[[], str] | None = None,
        no_mcp_reason: str = "this process serves no MCP endpoint",
    ) -> None:
        self.registry = registry
        self._mcp_url = mcp_url
        self.no_mcp_reason = no_mcp_reason
        self._dispatcher: Dispatcher | None = None
        self._attached = asyncio.Event()

    def attach(self, dispatcher: Dispatcher) -> None:
        self._dispatcher = dispatcher
        self._attached.set()

    async def _ready(self) -> Dispatcher:
        if self._dispatcher is None:
            try:
                await asyncio.wait_for(self._attached.wait(), START_WAIT_S)
            except TimeoutError:
                raise Unavailable("the server is still starting; call again in a moment") from None
        assert self._dispatcher is not None
        return self._dispatcher

    @property
    def mcp_url(self) -> str | None:
        """Where the product's MCP endpoint listens (``<origin>/mcp``), or ``None`` (``no_mcp_reason`` says why)."""
        return self._mcp_url() if self._mcp_url is not None else None

    async def call(
        self,
        principal: Principal,
        op_name: str,
        args: dict[str, Any],
        *,
        request_id: str | int | None = None,
        door: str = AGENT_DOOR,
    ) -> Any:
        """One op as ``principal``; answers the result in wire form or raises the ``HangarError`` a caller over
        the socket would get. Watch ops are not tools: they are refused as unknown."""
        spec = self._tool(op_name)
        dispatcher = await self._ready()
        ctx, parsed = await dispatcher.prepare("", request_id, spec, args, door=door, ask=None, principal=principal)
        return await dispatcher.call(ctx, parsed)

    async def authorize(
        self, principal: Principal, op_name: str, workspace_id: str, *, space_id: str | None = None, door: str
    ) -> None:
        """Raise what a call of ``op_name`` as ``principal`` would be refused for (its role, read-only mode,
        ask-first: nobody can be asked here), for work done on their behalf that amounts to that op without
        calling it (``Dispatcher.authorize``)."""
        spec = self._tool(op_name)
        await (await self._ready()).authorize(principal, spec, workspace_id, space_id=space_id, door=door)

    def _tool(self, op_name: str) -> OpSpec:
        spec = self.registry.get(op_name)
        if spec is None or not is_tool(spec):
            raise UnknownOp(f"there is no tool named {op_name!r}")
        return spec
