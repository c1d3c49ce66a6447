"""What one run of an agent may call of the product: an ``openai`` agent's product tools (called in this process)
and a command agent's MCP credential (called over the MCP endpoint). A ``hangar worker`` given a server gets both
from that server (``worker_link``: the ops run there); a process without a dispatcher or a server (a worker
started without ``--server``) offers neither, and says why."""

from __future__ import annotations

import logging

from hangar.agents.config import CommandAdapter, OpenAIAdapter
from hangar.agents.runs import Run
from hangar.agents.service import Agent
from hangar.agents.tools.catalogue import DEFAULT_PRODUCT_TOOLS, agent_principal, granted
from hangar.agents.tools.mcp_grant import UNAVAILABLE_VAR, McpGrant, grant_mcp
from hangar.agents.tools.product import RunProductTools
from hangar.agents.tools.worker_forge_link import WorkerForgeTokens
from hangar.agents.tools.worker_link import NO_SERVER, RemoteOpCaller, WorkerLink
from hangar.core.brokering import CredentialSource
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
    link = app.maybe_service(WorkerLink)
    if caller is None and link is not None:  # a worker: the ops run on its server (``worker_link``)
        names = granted(agent.adapter, link.registry, read_only=read_only)
        principal = agent_principal(agent.id, agent.name, workspace_id, space_id, run_id, names)
        return RunProductTools(RemoteOpCaller(link, run_id), names, principal)
    if caller is None:
        names = DEFAULT_PRODUCT_TOOLS if agent.adapter.product_tools is None else agent.adapter.product_tools
        if names:
            log.warning("agent run %s: product tools are not offered: this process has no dispatcher", run_id)
        principal = agent_principal(agent.id, agent.name, workspace_id, space_id, run_id, names)
        return RunProductTools(None, names, principal, unavailable="this process has no dispatcher")
    names = granted(agent.adapter, caller.registry, read_only=read_only)
    principal = agent_principal(agent.id, agent.name, workspace_id, space_id, run_id, names)
    return RunProductTools(caller, names, principal)


async def mcp_grant(app: AppContext, workspace_id: str, run: Run, agent: Agent, try_key: str | None = None) -> McpGrant:
    """A command agent's MCP credential for ``run`` (or why there is none); nothing for other agents, except on a
    worker (``try_key``: the step's try it drives the run in), where every agent's credential comes from its
    server (``worker_link``)."""
    caller = app.maybe_service(OpCaller)
    link = app.maybe_service(WorkerLink)
    if caller is None and try_key is not None and link is not None:
        return await link.grant(workspace_id, run, agent, try_key)
    if not isinstance(agent.adapter, CommandAdapter):
        return McpGrant()
    if caller is None and try_key is not None:
        return McpGrant({UNAVAILABLE_VAR: NO_SERVER})
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


def forge_credentials(app: AppContext, run_id: str, try_key: str | None = None) -> CredentialSource | None:
    """Who mints a command agent's forge token for ``run_id``: this process's broker in a server; on a worker
    (``try_key``: the step's try it drives the run in), its server, for that claim (``worker_forge_link``)."""
    if app.maybe_service(OpCaller) is None and try_key is not None:
        return WorkerForgeTokens(app.maybe_service(WorkerLink), try_key, run_id)
    return app.maybe_service(CredentialSource)
