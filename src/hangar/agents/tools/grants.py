"""What one run of an agent may call of the product: an ``openai`` agent's product tools (called in this process)
and a command agent's MCP credential (called over the MCP endpoint). A process without a dispatcher (a
``hangar worker``, ``hangar pipeline run``) offers neither, and says why."""

from __future__ import annotations

import logging

from hangar.agents.config import CommandAdapter, OpenAIAdapter
from hangar.agents.runs import Run
from hangar.agents.service import Agent
from hangar.agents.tools.catalogue import DEFAULT_PRODUCT_TOOLS, agent_principal, granted
from hangar.agents.tools.mcp_grant import McpGrant, grant_mcp
from hangar.agents.tools.product import RunProductTools
from hangar.core.context import AppContext
from hangar.rpc.op_caller import OpCaller

log = logging.getLogger(__name__)


def product_tools(
    app: AppContext, workspace_id: str, run_id: str, agent: Agent, space_id: str, *, read_only: bool = False
) -> RunProductTools | None:
    """The product's ops an ``openai`` agent calls in this process, as the agent (``product_tools``). A command
    agent calls them over the MCP endpoint instead (``mcp_grant``)."""
    if not isinstance(agent.adapter, OpenAIAdapter):
        return None
    caller = app.maybe_service(OpCaller)
    if caller is None:
        names = DEFAULT_PRODUCT_TOOLS if agent.adapter.product_tools is None else agent.adapter.product_tools
        if names:
            log.warning("agent run %s: product tools are not offered: this process has no dispatcher", run_id)
        principal = agent_principal(agent.id, agent.name, workspace_id, space_id, run_id, names)
        return RunProductTools(None, names, principal, unavailable="this process has no dispatcher")
    names = granted(agent.adapter, caller.registry, read_only=read_only)
    principal = agent_principal(agent.id, agent.name, workspace_id, space_id, run_id, names)
    return RunProductTools(caller, names, principal)


async def mcp_grant(app: AppContext, workspace_id: str, run: Run, agent: Agent) -> McpGrant:
    """A command agent's MCP credential for ``run`` (or why there is none); nothing for other agents."""
    if not isinstance(agent.adapter, CommandAdapter):
        return McpGrant()
    caller = app.maybe_service(OpCaller)
    tools = granted(agent.adapter, caller.registry, read_only=run.read_only) if caller is not None else ()
    return await grant_mcp(
        app,
        workspace_id=workspace_id,
        run_id=run.id,
        space_id=run.space_id,
        agent_id=agent.id,
        agent_name=agent.name,
        adapter=agent.adapter,
        tools=tools,
        dispatched_by=run.dispatched_by,
    )
