"""The server's side of an agent step on a ``hangar worker``: a credential for the agent's product tools, minted
by a server for one try of one step, never by the worker.

A worker holds a worker credential, which reaches the step queue and nothing of the product: the RPC socket, the
MCP endpoint and every route refuse it. For the agent it drives to call the product, the worker asks a server,
``POST /worker/agent-grants`` with ``Authorization: Bearer <worker credential>`` and ``{workspaceId, runId, tryKey}``.
The server checks, in the database every server shares, that the credential is live, that ``tryKey`` is the current
try of a step claimed by a worker holding that credential with its lease not lapsed
(``hangar.pipelines.live_claim``), and that the agent run is this attempt's and still running; then it mints the
same kind of credential a server gives a command agent (``hangar.agents.tools.mcp_grant``): it speaks for the
agent (``agent:<id>`` in audit rows), reaches its workspace, the run's space and the ops among its product tools
(as this server's registry serves them), on behalf of the workspace's owner, and its deadline is the claim's
lease, at most ``2 * LEASE_S`` ahead. The answer carries the token once; it is never stored (only its hash, as for
every device credential) nor logged. The credential is bound to what it was minted for: the worker credential
that asked, the agent run and the try (``minted_for``); one per run of a try, a second ask is refused (409).

Every heartbeat the worker asks again with ``deviceId``: the same checks, and the credential's deadline moves to
the claim's renewed lease, its tools narrowed to those the agent has now. Only a credential minted for this very
worker credential, run and try, not revoked and not past its deadline, is renewed: one minted for another run or
try, or one that lapsed, is refused, never revived. A claim that lapsed (its worker died: nobody renews; or was
fenced, cancelled, taken by another try), a revoked worker credential, a run no longer running or an agent
deleted is refused, and the credential named is revoked at once if this worker credential had it minted (for
this run or another), so the agent is refused at its next call; another worker's credential is never touched.
The worker revokes it when the run ends, however it ends.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from hangar.agents.runs import Run, RunStatus, RunStore
from hangar.agents.service import Agent, AgentService
from hangar.agents.tools.catalogue import granted
from hangar.agents.tools.mcp_grant import mint_agent_credential
from hangar.core.context import AppContext
from hangar.core.types import rfc3339
from hangar.errors import Forbidden, HangarError, InvalidArgs, NotFound, Unauthenticated
from hangar.httpkit.requests import bearer_token, read_body
from hangar.identity import IdentityService
from hangar.pipelines import LEASE_S, WorkerCredential, live_claim, parse_try_key, verify_worker_credential
from hangar.rpc.op_caller import OpCaller

log = logging.getLogger(__name__)

GRANTS_PATH = "/worker/agent-grants"
BODY_MAX = 4096  # bytes of a request: three ids and a key
M = TypeVar("M", bound=BaseModel)


class GrantAsk(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    workspace_id: str = Field(alias="workspaceId", min_length=1, max_length=36)
    run_id: str = Field(alias="runId", min_length=1, max_length=36)
    try_key: str = Field(alias="tryKey", min_length=1, max_length=400)
    device_id: str | None = Field(default=None, alias="deviceId", max_length=36)


async def read_ask(request: Request, model: type[M], shape: str) -> M:
    """The request's body as ``model`` (``shape`` names its fields in the refusal): at most ``BODY_MAX`` bytes
    (413 past it), whole within ``BODY_TIMEOUT_S`` (408 when it trickles or stalls)."""
    body = await read_body(request, BODY_MAX)
    try:
        return model.model_validate(json.loads(body or b"null"))
    except (ValueError, ValidationError) as exc:
        raise InvalidArgs(f"the request is not {shape} ({type(exc).__name__})") from None


async def worker_credential(request: Request, *, revoked_too: bool = False) -> WorkerCredential:
    """The worker credential the request carries, checked before its body is read (``revoked_too``: one revoked
    since is taken too, for what only ends something)."""
    app: AppContext = request.app.state.ctx
    text = bearer_token(request.headers.get("authorization"))
    if text is None:
        raise Unauthenticated("a worker asks with Authorization: Bearer <worker credential>")
    return await verify_worker_credential(app.dbs.server, text, revoked_too=revoked_too)


async def agent_grants(request: Request) -> JSONResponse:
    app: AppContext = request.app.state.ctx
    credential = await worker_credential(request)
    ask = await read_ask(request, GrantAsk, "{workspaceId, runId, tryKey, deviceId?}")
    try:
        answer = await _grant(app, credential.id, ask)
    except HangarError as err:
        if ask.device_id is not None:  # whatever no longer holds, the credential it named dies now, if its own
            await app.service(IdentityService).revoke_minted(ask.device_id, _minted_by(credential.id))
        log.info("worker grants: refused to worker credential %s: %s", credential.id, err.message)
        raise
    return JSONResponse(answer)


def _minted_by(credential_id: str) -> str:
    return f"{credential_id} "


def _minted_for(credential_id: str, ask: GrantAsk) -> str:
    """What a credential is bound to: the worker credential that asks, the agent run and the try."""
    return f"{_minted_by(credential_id)}{ask.run_id} {ask.try_key}"


@dataclass(frozen=True)
class ClaimedRun:
    run: Run
    agent: Agent
    lease: datetime  # when the claim lapses unless renewed


async def claimed_run(app: AppContext, credential_id: str, ws: str, run_id: str, try_key: str) -> ClaimedRun:
    """The agent run ``run_id`` and its agent, when ``try_key`` is a live claim of a worker holding this
    credential and the run is that attempt's and still running; else the refusal saying which does not hold."""
    if parse_try_key(try_key) is None:
        raise InvalidArgs("tryKey is not the key of a step's try", field="tryKey")
    lease = await live_claim(app.dbs.server, ws, try_key, credential_id)
    if lease is None:
        raise Forbidden(f"{try_key} is not a live claim of a worker with this credential")
    try:
        run = await RunStore(app).get(ws, run_id)
    except NotFound:
        raise Forbidden(f"agent run {run_id} is not a run of {try_key}") from None
    if run.dispatched_by != try_key.rpartition(".")[0]:
        raise Forbidden(f"agent run {run_id} is not a run of {try_key}")
    if run.status is not RunStatus.running:
        raise Forbidden(f"agent run {run_id} is over")
    try:
        agent = await app.service(AgentService).get(ws, run.agent_id)
    except NotFound:
        raise Forbidden(f"the agent of run {run_id} was deleted") from None
    return ClaimedRun(run, agent, lease)


async def _grant(app: AppContext, credential_id: str, ask: GrantAsk) -> dict[str, Any]:
    ws = ask.workspace_id
    claimed = await claimed_run(app, credential_id, ws, ask.run_id, ask.try_key)
    run, agent, lease = claimed.run, claimed.agent, claimed.lease
    # The database's lease, but never further ahead than a worker's own clock would put it.
    deadline = min(lease, app.clock.now() + timedelta(seconds=2 * LEASE_S))
    caller = app.maybe_service(OpCaller)
    tools = granted(agent.adapter, caller.registry, read_only=run.read_only) if caller is not None else ()
    bound = _minted_for(credential_id, ask)
    if ask.device_id is not None:
        if not await app.service(IdentityService).extend_device(ask.device_id, bound, deadline, frozenset(tools)):
            raise Forbidden(f"credential {ask.device_id} is not a live credential minted for {ask.try_key}")
        return {"deviceId": ask.device_id, "expiresAt": rfc3339(deadline)}
    minted = await mint_agent_credential(
        app,
        workspace_id=ws,
        space_id=run.space_id,
        agent_id=agent.id,
        agent_name=agent.name,
        tools=tools,
        dispatched_by=run.dispatched_by,
        expires_at=deadline,
        minted_for=bound,
    )
    if isinstance(minted, str):
        raise Forbidden(minted)
    device_id, token = minted
    return {"deviceId": device_id, "token": token, "expiresAt": rfc3339(deadline), "tools": list(tools)}


ROUTES = [Route(GRANTS_PATH, agent_grants, methods=["POST"])]
