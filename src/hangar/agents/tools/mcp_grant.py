"""A command agent's way back into Hangar: the product's MCP endpoint and a credential for the length of one run.

The program gets ``HANGAR_MCP_URL`` and ``HANGAR_MCP_TOKEN``, a device credential that speaks for the agent
(``agent:<id>`` in audit rows), reaches only the agent's workspace, the space the run works in
(``Principal.check_space``: an op naming another space is refused, ``spaces.list`` answers that space alone) and
the ops among its product tools, and expires with the run's time limit (an hour at most). It is issued on behalf
of the person who dispatched the run (deactivating them ends it) or, for a run no person dispatched (a pipeline
step, another agent), the workspace's first owner. It is revoked when the run ends, however it ends; should the
process driving the run die first, the deadline ends it.

The URL is the endpoint as the program reaches it, which the place it runs decides (``core.confine.CallBack``):
the server's own listener + ``/mcp`` under trusted host execution, the enclosure's server door otherwise
(``hangar.rigs.egress.server_door``: the gate passes that one endpoint on, nothing else of the listener).

Where no credential can be made (the process serves no MCP endpoint, as ``hangar pipeline run``; the workspace
has no owner to sponsor it), the program gets ``HANGAR_MCP_UNAVAILABLE`` with the reason instead, so an agent
that looks for the endpoint learns why it is not there.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from hangar.agents.config import CommandAdapter
from hangar.core.confine import CallBack
from hangar.core.context import AppContext
from hangar.core.principal import Role
from hangar.identity import DeviceScope, IdentityService
from hangar.rpc.op_caller import OpCaller

log = logging.getLogger(__name__)

MAX_LIFETIME_S = 3600.0
URL_VAR, TOKEN_VAR, UNAVAILABLE_VAR = "HANGAR_MCP_URL", "HANGAR_MCP_TOKEN", "HANGAR_MCP_UNAVAILABLE"


@dataclass(frozen=True)
class McpGrant:
    env: dict[str, str] = field(default_factory=dict)
    device_id: str | None = None
    call_back: CallBack | None = None  # the endpoint, handed to the program where it runs (``HANGAR_MCP_URL``)
    # What else ends with the credential: a worker's grant stops asking its server to renew it.
    stop: Callable[[], Awaitable[None]] | None = None


async def _sponsor(identity: IdentityService, workspace_id: str, dispatched_by: str) -> str | None:
    kind, _, who = dispatched_by.partition(":")
    if kind == "user" and who:
        return who
    owners = [m.user_id for m in await identity.members(workspace_id) if m.role is Role.owner]
    return owners[0] if owners else None


async def grant_mcp(
    app: AppContext,
    *,
    workspace_id: str,
    run_id: str,
    space_id: str,
    agent_id: str,
    agent_name: str,
    adapter: CommandAdapter,
    tools: tuple[str, ...],
    dispatched_by: str,
) -> McpGrant:
    """The environment a command agent's run gets for the MCP endpoint, and the credential to revoke after."""
    caller = app.maybe_service(OpCaller)
    url = caller.mcp_url if caller is not None else None
    if caller is None or url is None:
        return McpGrant({UNAVAILABLE_VAR: caller.no_mcp_reason if caller is not None else "no dispatcher here"})
    lifetime = min(adapter.timeout_seconds or MAX_LIFETIME_S, MAX_LIFETIME_S)
    minted = await mint_agent_credential(
        app,
        workspace_id=workspace_id,
        space_id=space_id,
        agent_id=agent_id,
        agent_name=agent_name,
        tools=tools,
        dispatched_by=dispatched_by,
        expires_at=app.clock.now() + timedelta(seconds=lifetime),
    )
    if isinstance(minted, str):
        return McpGrant({UNAVAILABLE_VAR: minted})
    device_id, token = minted
    return McpGrant({TOKEN_VAR: token}, device_id, CallBack(URL_VAR, url))


async def mint_agent_credential(
    app: AppContext,
    *,
    workspace_id: str,
    space_id: str,
    agent_id: str,
    agent_name: str,
    tools: tuple[str, ...],
    dispatched_by: str,
    expires_at: datetime,
    minted_for: str | None = None,
) -> tuple[str, str] | str:
    """A credential that speaks for the agent in one space of its workspace, for ``tools`` until ``expires_at``,
    on behalf of its sponsor: ``(device id, token)``, or why none can be made. ``minted_for``: what a worker's
    is bound to (``IdentityService.extend_device``)."""
    identity = app.service(IdentityService)
    sponsor = await _sponsor(identity, workspace_id, dispatched_by)
    if sponsor is None:
        return "the workspace has no owner on whose behalf the agent could call"
    scope = DeviceScope(
        workspace_id=workspace_id,
        space_id=space_id,
        tools=frozenset(tools),
        expires_at=expires_at,
        agent_id=agent_id,
    )
    return await identity.new_device(sponsor, agent_name, scope=scope, minted_for=minted_for)


async def revoke(app: AppContext, grant: McpGrant) -> None:
    if grant.stop is not None:
        await grant.stop()
    if grant.device_id is None:
        return
    try:
        await app.service(IdentityService).revoke_device_id(grant.device_id)
    except Exception:
        # The deadline still ends it; the run's end is recorded all the same.
        log.exception("revoking the MCP credential of an agent run failed")
